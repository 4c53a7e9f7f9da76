"""Stages a table in an Azurite (Azure Storage emulator) container.

usage: azurite_stage.py ENDPOINT CONTAINER PREFIX SRC_DIR [EXTRA_KEY ...]

Creates CONTAINER, uploads every file under SRC_DIR to PREFIX/<relative
path> and each EXTRA_KEY (relative to PREFIX) with a few bytes, then prints
JSON {"newest_ms": the newest Last-Modified of the container, in ms}: the
store's own clock, from which the tests derive the time they judge at.
"""

import json
import os
import sys

from azure.storage.blob import BlobServiceClient

# Azurite's well-known development account.
ACCOUNT = "devstoreaccount1"
KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def main():
    endpoint, container, prefix, src = sys.argv[1:5]
    extra = sys.argv[5:]
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
        f"BlobEndpoint={endpoint}/{ACCOUNT};"
    )
    svc = BlobServiceClient.from_connection_string(conn)
    c = svc.get_container_client(container)
    if not c.exists():
        c.create_container()
    for root, _, files in os.walk(src):
        for f in files:
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            with open(path, "rb") as fh:
                c.upload_blob(f"{prefix}/{rel}", fh, overwrite=True)
    for k in extra:
        c.upload_blob(f"{prefix}/{k}", b"extra", overwrite=True)
    newest = max(b.last_modified for b in c.list_blobs())
    print(json.dumps({"newest_ms": int(newest.timestamp() * 1000)}))


if __name__ == "__main__":
    main()
