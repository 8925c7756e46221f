"""plan.py: the one reader of the stored plan, and its fallbacks for older plans."""

from __future__ import annotations

from rows import load_tables

from benchq_reporter import plan


def stored_plan(name: str = "ycsb-redis.json") -> dict:
    return load_tables(name)["experiments"][0]["plan"]


def test_a_resolved_plan_is_read_as_stored():
    p = plan.read(stored_plan("benchbase-tpcc.json"))
    s = p.settings
    assert (s.benchmark, s.workload, s.sf, s.repetitions, s.test_results) == ("benchbase", "tpcc", 2.0, 1, True)
    assert (s.benchmarking_pods, s.target_base, s.duration_s) == ([1, 2], 400, 10.0)
    assert p.configurations == ["PostgreSQL-2-1-400-1"]
    assert [ph.name for ph in p.phases][:2] == ["PostgreSQL-2-1-400-1-0", "PostgreSQL-2-1-400-1-1"]


def test_a_plan_without_settings_takes_the_schedulers_defaults():
    stored = stored_plan()
    stored["settings"] = {}
    s = plan.read(stored).settings
    assert (s.benchmark, s.workload, s.repetitions, s.test_results, s.new_connection) == ("ycsb", "", 1, True, False)
    assert (s.sf, s.batch_size, s.target_base, s.duration_s) == (None, None, None, None)
    assert s.dbms == s.loading_pods == s.clients == []
    assert plan.read(stored).version == "dev"


def test_test_results_false_is_kept():
    stored = stored_plan()
    stored["settings"]["test_results"] = False
    assert plan.read(stored).settings.test_results is False


def test_an_older_benchbase_plan_without_workload_is_tpcc():
    stored = stored_plan("benchbase-tpcc.json")
    del stored["settings"]["workload"]
    assert plan.read(stored).settings.workload == "tpcc"


def test_configuration_and_phase_facts_default_for_older_plans():
    stored = {"configurations": [{"name": "c", "phases": [{"name": "c-load", "kind": "load"}]}]}
    (ph,) = plan.read(stored).phases
    assert (ph.configuration, ph.base, ph.experiment_run, ph.client, ph.pods) == ("c", "c", 1, 0, None)
    assert list(plan.read(stored).table()["order"]) == [0]
    assert plan.read(None).phases == [] and plan.read(None).table().empty
