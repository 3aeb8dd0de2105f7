"""stac-fastapi-pgstac with a same-origin asset store, for toolgate's tests and benchmark.

The STAC API (items, search, transactions) is stac-fastapi-pgstac's app unchanged. A STAC API
keeps item JSON only; a plot's features file is an asset whose href the item holds. Here the
assets live on the same origin under /assets/<collection>/<item>/<file> (GET and PUT, files in
$TOOLGATE_ASSET_DIR): what an object store or a file server next to the API does in a real
deployment, and what toolgate's client requires (same origin, http(s)).
"""

import os
import pathlib
import re

from fastapi import HTTPException, Request
from fastapi.responses import FileResponse, Response

from stac_fastapi.pgstac.app import create_app as create_stac_app

ASSET_DIR = pathlib.Path(os.environ.get("TOOLGATE_ASSET_DIR", "assets")).resolve()
MAX_ASSET = 512 * 1024 * 1024
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _path(path: str) -> pathlib.Path:
    parts = path.split("/")
    if len(parts) != 3 or not all(SEGMENT.match(p) for p in parts):
        raise HTTPException(status_code=404, detail="no such asset")
    return ASSET_DIR.joinpath(*parts)


def create_app():
    app = create_stac_app()

    @app.get("/assets/{path:path}")
    async def get_asset(path: str):
        p = _path(path)
        if not p.is_file():
            raise HTTPException(status_code=404, detail="no such asset")
        return FileResponse(p, media_type="application/geo+json")

    @app.put("/assets/{path:path}")
    async def put_asset(path: str, request: Request):
        p = _path(path)
        body = await request.body()
        if len(body) > MAX_ASSET:
            raise HTTPException(status_code=413, detail="asset too large")
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(body)
        tmp.replace(p)
        return Response(status_code=204)

    return app
