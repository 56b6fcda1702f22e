"""Running the service: per-user limits, metrics, request IDs, log format, graceful shutdown.

    operations.py     Operations: the limiter, metrics and shutdown coordinator of one app
    limits.py         Limiter: requests per minute by plan, open streams per user (429s)
    limit_stores.py   where the counts live: this process, or Redis shared by every process
    metrics.py        Metrics: the Prometheus instruments (their own registry per app)
    http_metrics.py   ASGI middleware: requests and latency by route template
    metered.py        a Model and a CreditService that count calls, tokens and credits
    request_ids.py    ASGI middleware: X-Request-ID, the context variable, error.request_id
    log_format.py     text or JSON log lines, each with the request ID
    shutdown.py       Shutdown: the grace period after SIGTERM, then stop what still runs
    serve.py          GracefulServer: uvicorn, starting that grace period

Nothing here imports the API layer; `api/rate_limits.py` and `api/routes/metrics.py` use this.
"""
