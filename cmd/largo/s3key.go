package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"largo/auth"
)

func newS3Key(e *env) *cobra.Command {
	var access, user string
	cmd := &cobra.Command{
		Use:   "s3key",
		Short: "Make an S3 key for the access file, or list the S3 keys it holds",
		Long: `Print a new S3 access key (its ID and secret) as the line to add to a user's
[[user]] table in the access file, for the S3 API (largo serve --s3-listen):

  [[user]]
  name = "alice"
  s3_keys = [{ id = "LK...", secret = "..." }]

A client signs its requests with the ID and the secret (aws configure, rclone's
access_key_id and secret_access_key, restic's AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY). AWS Signature Version 4 needs the secret itself on the
server, so the access file holds it as it is, not as a hash: largo refuses an
access file with S3 keys that others than its owner and group may read
(chmod o-rwx FILE).

With --access, print instead the IDs of the S3 keys the access file gives each
user (of --user only, if given), one "USER ID" a line; never a secret.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if access == "" {
				if user != "" {
					return usageErr(fmt.Errorf("--user goes with --access"))
				}
				id, secret := auth.NewS3Key()
				fmt.Fprintf(e.stdout, "s3_keys = [{ id = %q, secret = %q }]\n", id, secret)
				return nil
			}
			p, err := auth.LoadFile(access)
			if err != nil {
				return usageErr(err)
			}
			for _, u := range p.UserNames() {
				if user != "" && u != user {
					continue
				}
				for _, id := range p.S3Keys(u) {
					fmt.Fprintf(e.stdout, "%s %s\n", u, id)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&access, "access", "", "list the S3 key IDs of this access file's users instead")
	f.StringVar(&user, "user", "", "with --access, list only this user's")
	documentEnv(f)
	return cmd
}
