"""Schema fuzzing in CI: schemathesis against a live server with a seeded team.

Starts the server built by cargo (rate limits off, so fuzzing reaches every check), creates a team
with `licensing-server team create`, seeds a product, a branch, a customer, a license and a
release with a file through the developer API, and runs schemathesis over every operation of
`GET /api/openapi.json` with the API key and the seeded ids as path parameters. It fails on any
server error (5xx) or any answer that does not match the document.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target", "debug", "licensing-server")
SCHEMATHESIS = os.path.join(os.path.dirname(sys.executable), "schemathesis")


def main() -> int:
    data = tempfile.mkdtemp(prefix="licensing-schemathesis-")
    code = 1
    try:
        code = fuzz(data)
    finally:
        # Kept when something failed: the server's output is in it.
        if code == 0:
            shutil.rmtree(data, ignore_errors=True)
        else:
            print(f"the server's store and output are kept in {data}", file=sys.stderr)
    return code


def fuzz(data: str) -> int:
    """Starts the server on a store in `data` and runs schemathesis against it."""
    team = json.loads(
        subprocess.check_output([SERVER, "team", "create", "--name", "Fuzz", "--data-dir", data])
    )
    env = dict(os.environ, LICENSING_RATE_LIMIT_PER_MINUTE="0", LICENSING_DEV_RATE_LIMIT_PER_MINUTE="0",
               LICENSING_UPLOAD_RATE_LIMIT_PER_MINUTE="0", LICENSING_AUTH_FAILURE_LIMIT_PER_MINUTE="0")
    out = open(os.path.join(data, "server.out"), "w+")
    server = subprocess.Popen(
        [SERVER, "--listen", "127.0.0.1:0", "--data-dir", data],
        stdout=out,
        stderr=open(os.path.join(data, "server.err"), "w"),
        env=env,
    )
    try:
        base = None
        for _ in range(200):
            out.seek(0)
            match = re.search(r"http://127\.0\.0\.1:\d+", out.read())
            if match:
                base = match.group(0)
                break
            time.sleep(0.05)
        if base is None:
            print("the server did not start", file=sys.stderr)
            return 1
        dev = f"{base}/api/v1/dev/teams/{team['teamId']}"
        auth = {"Authorization": f"Bearer {team['apiKey']}"}

        def post(path: str, body: dict) -> dict:
            answer = requests.post(f"{dev}/{path}", json=body, headers=auth, timeout=30)
            answer.raise_for_status()
            return answer.json()["data"]

        product = post("products", {"name": "Fuzzed App"})["id"]
        branch = post(f"products/{product}/branches", {"name": "beta"})["id"]
        customer = post("customers", {"email": "fuzz@example.com"})["id"]
        license = post(
            "licenses",
            {"expirationType": "NEVER", "productIds": [product], "customerIds": [customer]},
        )
        release = requests.post(
            f"{dev}/releases",
            headers=auth,
            files={
                "data": (None, json.dumps({"version": "1.0.0", "productId": product, "status": "PUBLISHED", "setAsLatest": True})),
                "file": ("app.bin", b"\x00" * 1024),
            },
            timeout=30,
        )
        release.raise_for_status()
        release_id = release.json()["data"]["id"]
        entry = post("blacklist", {"type": "HARDWARE_IDENTIFIER", "value": "fuzz-device-0001"})["id"]
        key = post("api-keys", {"name": "fuzz"})["id"]

        config = os.path.join(data, "schemathesis.toml")
        with open(config, "w") as f:
            f.write(f'headers = {{ Authorization = "Bearer {team["apiKey"]}" }}\n\n[parameters]\n')
            for name, value in {
                "teamId": team["teamId"],
                "licenseId": license["id"],
                "licenseKey": license["licenseKey"],
                "customerId": customer,
                "productId": product,
                "branchId": branch,
                "releaseId": release_id,
                "blacklistId": entry,
                "apiKeyId": key,
            }.items():
                f.write(f'"path.{name}" = "{value}"\n')
        return subprocess.call(
            [
                SCHEMATHESIS,
                "--config-file",
                config,
                "run",
                f"{base}/api/openapi.json",
                "--checks",
                "not_a_server_error,response_schema_conformance",
                "--max-examples",
                os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"),
                "--seed",
                os.environ.get("SCHEMATHESIS_SEED", "20261122"),
            ]
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
