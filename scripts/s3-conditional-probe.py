#!/usr/bin/env python3
"""Which conditional writes an S3-compatible server honours.

Appends on object storage (docs/SCALE.md, "Appends on an object store")
commit with a conditional create; this probe says what a server does with
each precondition the designs weigh, so that a test never assumes a check
the server silently skips.

    scripts/s3-conditional-probe.py                  # starts moto_server on a free port
    scripts/s3-conditional-probe.py http://127.0.0.1:9000 BUCKET   # any running store

Uses boto3 (installed with moto by scripts/test.sh). Credentials come from
the usual AWS variables; moto accepts any. Exit status 0 when every probe
ran, whatever the server answered; 1 when one could not run.
"""

import os
import socket
import subprocess
import sys
import time
import uuid

import boto3
import botocore


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto():
    port = free_port()
    server = subprocess.Popen(
        ["moto_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    server.kill()
    sys.exit("s3-conditional-probe: moto_server did not start")


def outcome(call):
    """'ok' or the HTTP status and error code the server answered."""
    try:
        call()
        return "ok"
    except botocore.exceptions.ClientError as e:
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        return f"{status} {e.response['Error']['Code']}"


def main():
    server = None
    if len(sys.argv) > 1:
        endpoint, bucket = sys.argv[1], sys.argv[2]
    else:
        server, endpoint = start_moto()
        bucket = "probe-" + uuid.uuid4().hex[:12]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "probe")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "probe")
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    try:
        if server:
            s3.create_bucket(Bucket=bucket)
        prefix = "probe-" + uuid.uuid4().hex[:12] + "/"
        rows = []

        def probe(what, expected, call):
            rows.append((what, expected, outcome(call)))

        key = prefix + "object"
        s3.put_object(Bucket=bucket, Key=key, Body=b"first")
        etag = s3.head_object(Bucket=bucket, Key=key)["ETag"]
        probe("PutObject If-None-Match * on an existing key", "412",
              lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"x", IfNoneMatch="*"))
        probe("PutObject If-None-Match * on a new key", "ok",
              lambda: s3.put_object(Bucket=bucket, Key=prefix + "new", Body=b"x", IfNoneMatch="*"))
        probe("PutObject If-Match another ETag", "412",
              lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"x", IfMatch='"0123"'))
        probe("PutObject If-Match the ETag read", "ok",
              lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"second", IfMatch=etag))

        def multipart(target, **condition):
            upload = s3.create_multipart_upload(Bucket=bucket, Key=target)["UploadId"]
            part = s3.upload_part(Bucket=bucket, Key=target, UploadId=upload,
                                  PartNumber=1, Body=b"session")
            done = {"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}
            try:
                s3.complete_multipart_upload(Bucket=bucket, Key=target, UploadId=upload,
                                             MultipartUpload=done, **condition)
            finally:
                # Completed uploads are gone; a refused one must not stay billed.
                try:
                    s3.abort_multipart_upload(Bucket=bucket, Key=target, UploadId=upload)
                except botocore.exceptions.ClientError:
                    pass

        probe("CompleteMultipartUpload If-None-Match * on an existing key", "412",
              lambda: multipart(key, IfNoneMatch="*"))
        probe("CompleteMultipartUpload If-None-Match * on a new key", "ok",
              lambda: multipart(prefix + "new-multipart", IfNoneMatch="*"))
        probe("CompleteMultipartUpload If-Match another ETag", "412",
              lambda: multipart(key, IfMatch='"0123"'))

        def part_copy():
            # Its own source: the If-Match probe above may have replaced `key`.
            source = prefix + "copy-source"
            s3.put_object(Bucket=bucket, Key=source, Body=b"second")
            target = prefix + "copied"
            upload = s3.create_multipart_upload(Bucket=bucket, Key=target)["UploadId"]
            part = s3.upload_part_copy(Bucket=bucket, Key=target, UploadId=upload, PartNumber=1,
                                       CopySource={"Bucket": bucket, "Key": source},
                                       CopySourceRange="bytes=0-2")
            done = {"Parts": [{"PartNumber": 1, "ETag": part["CopyPartResult"]["ETag"]}]}
            s3.complete_multipart_upload(Bucket=bucket, Key=target, UploadId=upload,
                                         MultipartUpload=done)
            body = s3.get_object(Bucket=bucket, Key=target)["Body"].read()
            if body != b"sec":
                raise RuntimeError(f"UploadPartCopy copied {body!r}, not b'sec'")

        probe("UploadPartCopy of a range", "ok", part_copy)

        width = max(len(r[0]) for r in rows)
        print(f"{'request':<{width}}  expected  server")
        for what, expected, got in rows:
            flag = "" if got.startswith(expected) else "   <- the server skips this check"
            print(f"{what:<{width}}  {expected:<8}  {got}{flag}")
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": o["Key"]} for o in listed]})
    finally:
        if server:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
