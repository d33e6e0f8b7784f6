"""Workloads migrated per second: N Deployments asking ``nvidia.com/gpu`` (claims mode), text in, text out.

Run: ``python benchmarks/migrate.py [-n 1000]``. Round-trip parsing (ruamel.yaml, pure Python, comments kept),
the rewrite, and printing the multi-document stream.
"""

from __future__ import annotations

import argparse
import time

import yaml

from kubedra.migrate import Options, Source, dump, migrate


def _deployment(i: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"svc-{i}", "namespace": "serving"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": f"svc-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"svc-{i}"}},
                "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.6.3",
                                         "resources": {"limits": {"cpu": "4", "nvidia.com/gpu": "1"}}}]},
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=1000)
    count = parser.parse_args().n
    text = "# inference fleet\n" + yaml.safe_dump_all([_deployment(i) for i in range(count)], sort_keys=False)
    began = time.perf_counter()
    result = migrate([Source("fleet.yaml", text)], Options())
    out = "".join(dump(f.documents) for f in result.files)
    elapsed = time.perf_counter() - began
    print(f"{count} Deployments -> {out.count('kind: ResourceClaimTemplate')} templates in {elapsed:.2f} s "
          f"({count / elapsed:,.0f} workloads/s)")


if __name__ == "__main__":
    main()
