"""The web face: the Starlette app (/metrics, /healthz, /readyz, /) and the /api/v1/cluster JSON.
May import `service`, `version` and every folder below: collectors, connect, hes, probe, model."""
