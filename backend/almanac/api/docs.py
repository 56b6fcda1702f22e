"""Interactive API docs at /docs: Swagger UI served from this server (the `swagger-ui-bundle`
package) under the same strict Content-Security-Policy as everything else — no CDN, no inline
script. The page and the cookie-authenticated API share an origin, so nothing on it may run
code from elsewhere. The assets come from the `swagger-ui-py` distribution (Swagger UI 5, which
reads OpenAPI 3.1); the package is located, never imported."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from almanac.api.errors import error_body

_ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")
_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} — API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""
_INIT = (
    'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, '
    "presets: [SwaggerUIBundle.presets.apis], layout: 'BaseLayout'});\n"
)


def mount_api_docs(app: FastAPI) -> bool:
    """Serve /docs if the Swagger UI assets are installed; returns whether they are."""
    folder = swagger_ui_assets()
    if folder is None:
        return False
    page = _PAGE.format(title=app.title)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    @app.get("/docs/init.js", include_in_schema=False)
    async def docs_init() -> Response:
        return Response(_INIT, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Response:
        if name not in _ASSETS:
            return JSONResponse(error_body("not_found", "Not Found"), status_code=404)
        return FileResponse(str(folder / name), headers={"Cache-Control": "public, max-age=86400"})

    return True


def swagger_ui_assets() -> Path | None:
    """The folder of Swagger UI's static files, if installed."""
    spec = importlib.util.find_spec("swagger_ui")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        folder = Path(location) / "static"
        if all((folder / name).is_file() for name in _ASSETS):
            return folder
    return None
