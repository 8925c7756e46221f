"""Grafana: the dashboards as code (dashboards) and their queries run as Grafana would (queries)."""
