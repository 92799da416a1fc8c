"""The Spark session of both jobs, and Arrow schemas in Spark's terms."""

from __future__ import annotations

import os
import sys

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"


def session(app: str) -> SparkSession:
    # Tasks must run the same Python as the driver: the engine is imported there.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app)
        # Archive dates stay strings ("unknown" included); no type guessing.
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true")
    )
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Not launched by spark-submit (whose --master then rules): run on this machine.
        builder = builder.master(os.environ.get("CERFLEET_SPARK_MASTER", "local[*]"))
    spark = builder.getOrCreate()
    conf = spark.sparkContext.getConf()
    if not conf.contains("spark.sql.files.maxPartitionBytes"):
        # Smaller input splits than Spark's 128 MiB: the first Python pass over an archive
        # of a few large files must still keep every core busy.
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(32 * 2**20))
    if not conf.contains("spark.sql.shuffle.partitions"):
        # Spark's default of 200 shuffle tasks costs more than the work on small inputs;
        # a few per core, unless the user chose (--spark-conf / --conf).
        spark.conf.set(
            "spark.sql.shuffle.partitions", str(4 * spark.sparkContext.defaultParallelism)
        )
    if not conf.contains(ARROW_MAX_BYTES):
        # At Int.MaxValue Spark skips its byte count of every batch, which it otherwise
        # recomputes after each row written into it (walking every column's vectors):
        # 17% of the JVM's samples in a task feeding mapInArrow. Batches are bounded by
        # records (maxRecordsPerBatch) all the same.
        spark.conf.set(ARROW_MAX_BYTES, str(2**31 - 1))
    spark.sparkContext.setLogLevel(os.environ.get("CERFLEET_SPARK_LOG_LEVEL", "WARN"))
    return spark


def warm_up(spark: SparkSession) -> None:
    """One trivial task per core, so that every core's Python worker is up (Spark reuses
    them): what follows is the job itself, and the time to here is Spark's fixed cost
    (JVM, session, executors, Python workers), which the summary reports apart."""
    cores = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(cores), cores).map(lambda x: x).collect()


def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema)
