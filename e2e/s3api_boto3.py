"""Drives largo's S3 API with boto3, for e2e/s3api_clients_test.go.

Usage: s3api_boto3.py ENDPOINT SOURCE_FILE DOWNLOAD_FILE

The credentials and the region come from the environment. The script
puts, reads, lists, copies and removes objects, sends SOURCE_FILE in parts
with upload_file and fetches it into DOWNLOAD_FILE, and prints
"boto3: ok" when every step did what S3 says it does.
"""

import sys

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError


def main():
    endpoint, source, download = sys.argv[1:4]
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    b = "largo"

    assert any(x["Name"] == b for x in s3.list_buckets()["Buckets"]), "the bucket is listed"
    s3.head_bucket(Bucket=b)

    s3.put_object(Bucket=b, Key="boto/a.txt", Body=b"alpha", ContentType="text/plain",
                  Metadata={"who": "boto3"})
    got = s3.get_object(Bucket=b, Key="boto/a.txt")
    assert got["Body"].read() == b"alpha", "the bytes read back"
    assert got["Metadata"].get("who") == "boto3", "the metadata kept: %r" % got["Metadata"]
    assert got["ContentType"] == "text/plain", got["ContentType"]

    part = s3.get_object(Bucket=b, Key="boto/a.txt", Range="bytes=1-3")
    assert part["Body"].read() == b"lph", "a range"

    try:
        s3.get_object(Bucket=b, Key="boto/missing.txt")
        raise AssertionError("a missing key was found")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchKey", e.response["Error"]

    s3.copy_object(Bucket=b, Key="boto/b.txt", CopySource={"Bucket": b, "Key": "boto/a.txt"})
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="boto/")["Contents"]]
    assert keys == ["boto/a.txt", "boto/b.txt"], keys

    out = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "boto/b.txt"}, {"Key": "boto/none"}]})
    assert sorted(d["Key"] for d in out.get("Deleted", [])) == ["boto/b.txt", "boto/none"], out
    assert "Contents" not in s3.list_objects(Bucket=b, Prefix="boto/b")

    cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024, max_concurrency=4)
    s3.upload_file(source, b, "boto/big.bin", Config=cfg)
    s3.download_file(b, "boto/big.bin", download, Config=cfg)

    s3.delete_object(Bucket=b, Key="boto/a.txt")
    print("boto3: ok")


if __name__ == "__main__":
    main()
