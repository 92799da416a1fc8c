"""The Grafana dashboard (one file, shared by the chart and docker compose): valid JSON
whose PromQL only names metrics the coordinator and the workers export."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploy.artefacts import DASHBOARD, TEMPLATES, exported_metric_names

METRIC = re.compile(r"\b(cerfleet_[a-z0-9_]+)\b")


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def panels(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in doc.get("panels", []):
        yield panel
        yield from panels(panel)  # rows may nest their panels


def expressions(doc: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in panels(doc) for t in p.get("targets", [])]
    for variable in doc.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            exprs.append(query["query"] if isinstance(query, dict) else query)
    return exprs


def test_every_metric_the_dashboard_queries_is_exported_by_the_code(
    dashboard: dict[str, Any],
) -> None:
    exported = exported_metric_names()
    used = {name for expr in expressions(dashboard) for name in METRIC.findall(expr)}
    assert used, "no cerfleet metric in the dashboard"
    assert not used - exported, f"not exported: {sorted(used - exported)}"


def test_every_panel_query_reads_a_cerfleet_metric(dashboard: dict[str, Any]) -> None:
    for expr in expressions(dashboard):
        assert METRIC.search(expr), expr


def test_the_dashboard_covers_throughput_latency_lag_errors_checkpoints_and_keys(
    dashboard: dict[str, Any],
) -> None:
    used = {name for expr in expressions(dashboard) for name in METRIC.findall(expr)}
    wanted = {
        "cerfleet_coordinator_events_in_total",  # events in
        "cerfleet_worker_events_in_total",
        "cerfleet_complex_events_out_total",  # events out
        "cerfleet_processing_latency_seconds_bucket",  # latency quantiles
        "cerfleet_consumer_lag",
        "cerfleet_dead_letters_total",
        # Partitions paused because an output topic cannot be created: /healthz stays
        # 200 meanwhile, so no probe failure or restart draws attention to them.
        "cerfleet_worker_blocked_partitions",
        "cerfleet_worker_output_topic_errors_total",
        "cerfleet_checkpoint_size_bytes",
        "cerfleet_checkpoint_duration_seconds_bucket",
        "cerfleet_active_keys",
    }
    assert wanted <= used, f"no panel for {sorted(wanted - used)}"
    latency = [e for e in expressions(dashboard) if "processing_latency_seconds_bucket" in e]
    assert {"0.5", "0.95", "0.99"} <= {
        m for e in latency for m in re.findall(r"histogram_quantile\(([\d.]+)", e)
    }


def test_panels_have_unique_ids_a_grid_position_and_the_datasource_variable(
    dashboard: dict[str, Any],
) -> None:
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            # A variable rather than a fixed uid: compose's provisioned source and a
            # cluster's Prometheus have different uids.
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"


def test_the_dashboard_has_a_stable_uid_and_title(dashboard: dict[str, Any]) -> None:
    # Links and the compose home dashboard point at it by uid.
    assert dashboard["uid"] == "cerfleet"
    assert dashboard["title"]


def test_the_chart_ships_this_file_as_its_dashboard_configmap() -> None:
    template = (TEMPLATES / "dashboard-configmap.yaml").read_text(encoding="utf-8")
    relative = DASHBOARD.relative_to(TEMPLATES.parent).as_posix()
    assert f'.Files.Get "{relative}"' in template
    assert "grafana_dashboard" in (TEMPLATES.parent / "values.yaml").read_text(encoding="utf-8")
