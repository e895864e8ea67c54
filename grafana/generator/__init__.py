"""The source of Vigía's Grafana boards, which grafana/generate_dashboards.py writes as JSON."""
