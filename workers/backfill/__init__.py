"""Backfills: archive input topics to Parquet and re-run queries over them with Spark.

The split mirrors the fleet: what a Spark task runs is plain Python over Arrow
batches (``prepare``, ``slices``, ``units``, ``kafka_ranges``) and can be tested
without Spark; ``compact_job`` and ``backfill_job`` are the Spark drivers that
wire those functions into DataFrames; ``submit`` builds the ``spark-submit``
command behind ``cerfleet compact`` / ``cerfleet backfill``.
"""
