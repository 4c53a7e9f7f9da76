"""A real pyiceberg table for the sidecar's expiry test (pyiceberg 0.12.0).

Usage (the table is demo.t, or LAKESWEEP_TEST_TABLE; the catalog DIR/catalog.db,
or Glue at LAKESWEEP_TEST_GLUE):
  iceberg_table.py write DIR [DATA_PATH]
                               make DIR/catalog.db and table demo.t: two
                               appends, an overwrite, an append; prints JSON
                               (DATA_PATH: the table's write.data.path)
  iceberg_table.py refs DIR    every file each snapshot references (manifest
                               list, manifests, data files of any status)
  iceberg_table.py check DIR   load the table, scan the current snapshot and
                               time-travel to every snapshot; prints JSON
  iceberg_table.py orphans DIR N AGE_DAYS
                               write N Parquet files of the table's schema under
                               its data folder (never committed: garbage), dated
                               AGE_DAYS ago; prints their keys (absolute URIs under
                               a write.data.path outside the table)
  iceberg_table.py write-info DIR
                               the table's location and current metadata location
  iceberg_table.py nest DIR OUTER
                               create the table inside table OUTER's location
  iceberg_table.py add DIR KEY register an existing data file (add_files), the way
                               writers adopt files they did not write
  iceberg_table.py static METADATA_URI
                               read a table from its metadata document alone
                               (a restore into scratch): its current snapshot's
                               rows, and every snapshot's; prints JSON
  iceberg_table.py hive DIR OUTER SUBDIR N AGE_DAYS
                               in Glue (LAKESWEEP_TEST_GLUE), a Hive (Parquet) table
                               TABLE located at SUBDIR inside table OUTER's location,
                               with one partition `p=1` and N files in each, dated
                               AGE_DAYS ago; prints their URIs
"""

import os
import time

import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo


# The table every command works on; another with LAKESWEEP_TEST_TABLE=demo.u.
TABLE = os.environ.get("LAKESWEEP_TEST_TABLE", "demo.t")


def catalog(d):
    """The SQL catalog DIR/catalog.db, or with LAKESWEEP_TEST_GLUE set to an
    endpoint, the Glue catalog there (moto); data under DIR/warehouse."""
    glue = os.environ.get("LAKESWEEP_TEST_GLUE")
    if glue:
        from pyiceberg.catalog.glue import GlueCatalog

        return GlueCatalog(
            "lakesweep",
            **{
                "glue.endpoint": glue,
                "glue.region": "us-east-1",
                "glue.access-key-id": "testing",
                "glue.secret-access-key": "testing",
                "warehouse": f"file://{d}/warehouse",
            },
        )
    return SqlCatalog(
        "lakesweep",
        uri=f"sqlite:///{d}/catalog.db",
        warehouse=f"file://{d}/warehouse",
    )


def rows(ids, cat):
    return pa.table(
        {
            "id": pa.array(ids, type=pa.int64()),
            "cat": pa.array([cat] * len(ids), type=pa.string()),
        }
    )


def write(d, data_path=None):
    c = catalog(d)
    c.create_namespace_if_not_exists("demo")
    props = {"write.data.path": data_path} if data_path else {}
    t = c.create_table(TABLE, schema=rows([1], "a").schema, properties=props)
    t.append(rows([1, 2], "a"))
    t.append(rows([3, 4], "b"))
    t.overwrite(rows([5, 6], "c"))
    t.append(rows([7], "d"))
    t = c.load_table(TABLE)
    print(
        json.dumps(
            {
                "location": t.location(),
                "metadata_location": t.metadata_location,
                "snapshots": [s.snapshot_id for s in t.snapshots()],
                "current": t.current_snapshot().snapshot_id,
            }
        )
    )


def refs(d):
    t = catalog(d).load_table(TABLE)
    out = {}
    for s in t.snapshots():
        files = {s.manifest_list}
        for m in s.manifests(t.io):
            files.add(m.manifest_path)
            for e in m.fetch_manifest_entry(t.io, discard_deleted=False):
                files.add(e.data_file.file_path)
        out[str(s.snapshot_id)] = sorted(files)
    print(json.dumps(out))


def check(d):
    t = catalog(d).load_table(TABLE)
    travel = {}
    for s in t.snapshots():
        travel[str(s.snapshot_id)] = t.scan(snapshot_id=s.snapshot_id).to_arrow().num_rows
    print(
        json.dumps(
            {
                "snapshots": [s.snapshot_id for s in t.snapshots()],
                "rows": t.scan().to_arrow().num_rows,
                "filtered": t.scan(row_filter=EqualTo("cat", "d")).to_arrow().num_rows,
                "travel": travel,
            }
        )
    )


def orphans(d, n, age_days):
    import pyarrow.parquet as pq

    t = catalog(d).load_table(TABLE)
    data = t.properties.get("write.data.path")
    when = time.time() - float(age_days) * 86400
    keys = []
    for i in range(int(n)):
        if data:
            key = f"{data}/orphan-{i:03d}.parquet"
            path = key.removeprefix("file://")
            os.makedirs(os.path.dirname(path), exist_ok=True)
        else:
            key = f"data/orphan-{i:03d}.parquet"
            path = f"{t.location().removeprefix('file://')}/{key}"
        pq.write_table(rows([1000 + i], "z"), path)
        os.utime(path, (when, when))
        keys.append(key)
    print(json.dumps(keys))


def write_info(d):
    t = catalog(d).load_table(TABLE)
    print(json.dumps({"location": t.location(), "metadata_location": t.metadata_location}))


def nest(d, outer):
    """Create TABLE inside OUTER's location, one append, every file aged 10 days."""
    c = catalog(d)
    o = c.load_table(outer)
    n = c.create_table(
        TABLE, schema=rows([1], "a").schema, location=f"{o.location()}/nested/{TABLE}"
    )
    n.append(rows([1, 2], "n"))
    when = time.time() - 10 * 86400
    for dp, _, names in os.walk(n.location().removeprefix("file://")):
        for f in names:
            os.utime(os.path.join(dp, f), (when, when))


def add(d, key):
    t = catalog(d).load_table(TABLE)
    t.add_files([key if "://" in key else f"{t.location()}/{key}"])


def hive(d, outer, subdir, n, age_days):
    """A Hive table of Parquet files the Glue catalog records inside OUTER."""
    import boto3
    import pyarrow.parquet as pq

    location = f"{catalog(d).load_table(outer).location()}/{subdir}"
    ns, name = TABLE.split(".")
    glue = boto3.client(
        "glue",
        endpoint_url=os.environ["LAKESWEEP_TEST_GLUE"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    sd = lambda loc: {
        "Columns": [{"Name": "id", "Type": "bigint"}, {"Name": "cat", "Type": "string"}],
        "Location": loc,
        "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"},
    }
    glue.create_table(
        DatabaseName=ns,
        TableInput={
            "Name": name,
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": sd(location),
            "PartitionKeys": [{"Name": "p", "Type": "int"}],
        },
    )
    # A partition kept elsewhere in OUTER, as Hive allows.
    part = f"{location}-partitions/p=1"
    glue.create_partition(
        DatabaseName=ns,
        TableName=name,
        PartitionInput={"Values": ["1"], "StorageDescriptor": sd(part)},
    )
    when = time.time() - float(age_days) * 86400
    uris = []
    for folder in (location, part):
        path = folder.removeprefix("file://")
        os.makedirs(path, exist_ok=True)
        for i in range(int(n)):
            f = f"{path}/part-{i:03d}.parquet"
            pq.write_table(rows([2000 + i], "h"), f)
            os.utime(f, (when, when))
            uris.append(f"file://{f}")
    print(json.dumps(uris))


def static(uri):
    from pyiceberg.table import StaticTable

    t = StaticTable.from_metadata(uri)
    travel = {str(s.snapshot_id): t.scan(snapshot_id=s.snapshot_id).to_arrow().num_rows for s in t.snapshots()}
    # Every manifest list's recorded manifest length is the manifest's size
    # (Java readers open manifests by that length).
    lengths_ok = all(
        m.manifest_length == os.path.getsize(m.manifest_path.removeprefix("file://"))
        for s in t.snapshots()
        for m in s.manifests(t.io)
    )
    print(json.dumps({"current": t.current_snapshot().snapshot_id, "rows": t.scan().to_arrow().num_rows,
                      "travel": travel, "location": t.location(), "lengths_ok": lengths_ok}))


if __name__ == "__main__":
    {"static": static, "hive": hive, "write": write, "write-info": write_info, "refs": refs, "check": check, "orphans": orphans, "add": add, "nest": nest}[
        sys.argv[1]
    ](*sys.argv[2:])
