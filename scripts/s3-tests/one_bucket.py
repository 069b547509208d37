"""A pytest plugin that runs ceph/s3-tests against a server of one bucket.

largo serves its folder or bucket as one S3 bucket and makes no other
(docs/s3.md). The conformance suite makes a fresh bucket for nearly every
test; this plugin, loaded with `-p one_bucket`, gives each test the one
bucket instead, emptied before and after it as a fresh bucket would be:

- the suite's "new bucket" is always the served bucket;
- a CreateBucket of that name with no other parameter succeeds (it is
  there); one with an ACL, object lock or a location is sent as it is, and
  fails as any bucket-level feature largo does not have;
- before and after each test the bucket's uploads are aborted and its
  objects deleted through the API, and what is left in the folder (empty
  folders, which S3 has not) is removed from the disk.

Nothing of the suite is changed or copied: its functions are replaced at
run time. Settings come from the environment: LARGO_S3T_BUCKET (the
bucket, default largo) and LARGO_S3T_DIR (the served folder).
"""

import os
import shutil

import botocore.client
import pytest

BUCKET = os.environ.get("LARGO_S3T_BUCKET", "largo")
FOLDER = os.environ.get("LARGO_S3T_DIR", "")

_make_api_call = botocore.client.BaseClient._make_api_call


def _api_call(self, operation, params):
    if operation == "CreateBucket" and params == {"Bucket": BUCKET}:
        return {}
    return _make_api_call(self, operation, params)


def _empty(functional):
    client = functional.get_client()
    try:
        uploads = client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
        for u in uploads:
            client.abort_multipart_upload(Bucket=BUCKET, Key=u["Key"], UploadId=u["UploadId"])
    except Exception:
        pass
    while True:
        keys = [{"Key": o["Key"]} for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
        if not keys:
            break
        client.delete_objects(Bucket=BUCKET, Delete={"Objects": keys})
    if FOLDER:
        for name in os.listdir(FOLDER):
            if name.startswith("."):
                continue  # the state area, and hidden names
            path = os.path.join(FOLDER, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def pytest_configure(config):
    import s3tests.functional as functional

    botocore.client.BaseClient._make_api_call = _api_call
    functional.get_new_bucket_name = lambda: BUCKET
    functional.setup = lambda: _empty(functional)
    functional.teardown = lambda: _empty(functional)
    # The test modules import these names: replace them there too.
    for mod in ("s3tests.functional.test_s3", "s3tests.functional.test_headers"):
        try:
            m = __import__(mod, fromlist=["x"])
        except ImportError:
            continue
        m.get_new_bucket_name = functional.get_new_bucket_name
