"""reporter report: the HTML page and its plots, checked in headless Chromium.

The fixture is the monitored Redis experiment of test_dataframes.py (real
YCSB results, intervals and metrics) in a throw-away PostgreSQL.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rows import frames_tables, insert

from benchq_reporter.cli import main
from benchq_reporter.outputs import report
from benchq_reporter.selfcheck import report as selfcheck_report

needs_chromium = pytest.mark.skipif(
    shutil.which("chromium") is None, reason="chromium is not installed (scripts/bootstrap.sh installs it)"
)


@pytest.fixture(scope="module")
def db(postgres_url):
    tables = frames_tables()
    tables["experiments"][0]["code"] = "report-redis"
    insert(postgres_url, tables)
    return postgres_url


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), {}, out, err), out.getvalue(), err.getvalue()


def test_report_writes_the_page_and_the_pngs(db, tmp_path):
    status, out, err = run(
        "report", "--db", db, "-e", "report-redis", "-o", str(tmp_path / "r.html"), "--png", str(tmp_path / "png")
    )
    assert status == 0, err
    written = out.splitlines()
    assert written[0] == str(tmp_path / "r.html")
    slugs = sorted(Path(p).stem for p in written[1:])
    # One throughput plot per benchmarking phase, one latency plot per
    # operation, CPU and RAM: the fixture has all of them.
    assert any(s.startswith("throughput-") for s in slugs), slugs
    assert any(s.startswith("latency-") for s in slugs), slugs
    assert {"monitoring-cpu_seconds", "monitoring-max_ram"} <= set(slugs), slugs
    # The phase timeline, loading's throughput too, latency, CPU and memory over time.
    assert {"timeline", "cpu-time", "memory-time"} <= set(slugs), slugs
    assert any(s.startswith("latency-time-") for s in slugs), slugs
    assert sum(s.startswith("throughput-") for s in slugs) >= 2, slugs  # loading and benchmarking
    page = (tmp_path / "r.html").read_text()
    for slug in slugs:
        assert f'id="{slug}"' in page
        assert (tmp_path / "png" / f"{slug}.png").stat().st_size > 1000
    # The summary's tables are there, as tables.
    assert "<h4>Execution</h4>" in page and "<th>DBMS</th>" in page
    assert "http://www.w3.org/2000/svg" in page and not selfcheck_report.FETCHES.search(page)


def test_report_of_an_unknown_experiment(db, tmp_path):
    status, _, err = run("report", "--db", db, "-e", "no-such", "-o", str(tmp_path / "r.html"))
    assert status == 1 and "no experiment with code 'no-such'" in err
    assert not (tmp_path / "r.html").exists()


def test_markdown_tables_become_html_tables():
    got = report.markdown_html("### Loading\n\n| DBMS | time |\n|:--|--:|\n| Redis-1 | 1,234.50 |\n\n* a note <b>\n")
    assert got == (
        "<h4>Loading</h4>\n<table><thead><tr><th>DBMS</th><th>time</th></tr></thead><tbody>"
        '<tr><td>Redis-1</td><td class="num">1,234.50</td></tr></tbody></table>\n'
        '<p style="margin-left: 0em">&bull; a note &lt;b&gt;</p>'
    )


@needs_chromium
def test_the_page_renders_in_chromium(db, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    status = selfcheck_report.main(
        ["--db", db, "-e", "report-redis", "-o", str(tmp_path / "r.html"), "--screenshot", str(tmp_path / "r.png")],
        out,
        err,
    )
    assert status == 0, err.getvalue()
    assert "rendered as SVG" in out.getvalue()
    assert selfcheck_report.blank_share(tmp_path / "r.png") < 0.99


@needs_chromium
@pytest.mark.parametrize(
    "fault, says",
    [
        ('<script>console.error("boom")</script>', "console messages"),
        ('<img src="https://example.invalid/x.png">', "fetches from the network"),
        ("", "0 plots rendered"),
    ],
)
def test_the_browser_check_fails_on_a_broken_page(tmp_path, fault, says):
    page = tmp_path / "p.html"
    page.write_text(f"<!DOCTYPE html><html><body><h1>x</h1>{fault}</body></html>")
    with pytest.raises(selfcheck_report.CheckFailed, match=says):
        selfcheck_report.check_page(page, 1 if fault else 2, tmp_path / "p.png")


@needs_chromium
def test_a_blank_screenshot_is_caught(tmp_path):
    page = tmp_path / "p.html"
    page.write_text(
        '<!DOCTYPE html><html><body><figure class="plot"><figcaption>x</figcaption>'
        '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg></figure></body></html>'
    )
    with pytest.raises(selfcheck_report.CheckFailed, match="blank"):
        selfcheck_report.check_page(page, 1, tmp_path / "p.png")


def test_tpcc_report_plots_latency_per_phase():
    """A TPC-C experiment's latency plot: the average and merged p95 of each benchmarking phase."""
    from rows import experiment, load_tables

    from benchq_reporter.summary import summarize

    summary = summarize(experiment(load_tables("benchbase-tpcc.json")))
    made, missing = report._latency_per_phase({}, summary)
    try:
        tpcc = [p for p in made if p.slug == "latency-tpcc"]
        assert len(tpcc) == 1 and missing == "", missing
        bars = tpcc[0].figure.axes[0].patches
        assert len(bars) == 2 * len(summary.benchbase.aggregated)  # average and p95 of each phase
        p95 = summary.benchbase.aggregated["Latency Distribution.95th Percentile Latency (microseconds)"]
        assert sorted(round(b.get_width(), 6) for b in bars[len(p95) :]) == sorted(round(v / 1000, 6) for v in p95)
    finally:
        report.close(made)


def test_every_axis_says_what_it_holds():
    """No plot of the report has an axis without a label; the check itself finds one."""
    from rows import experiment

    from benchq_reporter import dataframes
    from benchq_reporter.summary import summarize

    tables = frames_tables()
    data = experiment(tables)
    made, _ = report.plots(dataframes.build(data, tables), summarize(data))
    try:
        assert len(made) >= 8, [p.slug for p in made]
        assert {p.slug: report.unlabelled(p.figure) for p in made if report.unlabelled(p.figure)} == {}
        made[0].figure.axes[0].set_xlabel("")
        assert report.unlabelled(made[0].figure) == ["axes 0: no x label"]
    finally:
        report.close(made)


def test_latency_over_time_hides_cleanup(db):
    """YCSB's CLEANUP (closing the client) is no operation of the workload: hidden as in the summary."""
    from benchq_reporter import dataframes

    frames = dataframes.load("report-redis", db)
    assert frames["interval_operations"]["operation"].isin(["CLEANUP", "Intended-CLEANUP"]).any()
    plots, _ = report._latency_over_time(frames, None)
    labels = [t.get_text() for p in plots for t in p.figure.axes[0].get_legend().get_texts()]
    report.close(plots)
    assert labels and not any("CLEANUP" in label for label in labels), labels
