"""``kubedra plan``: search node counts of candidate pools for the cheapest fleet whose simulation meets a goal."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from kubedra.cli.helptext import command_help
from kubedra.cli.options import GatesOption, OutputOption, PolicyOption, SeedOption, VersionOption, parse_features
from kubedra.cli.output import (
    EXIT_OK,
    EXIT_UNSCHEDULABLE,
    TABLE_FORMATS,
    Column,
    OutputFormat,
    Table,
    default_format,
    fail,
    fail_invalid,
    print_data,
    print_lines,
    print_names,
    print_table,
    stderr_console,
)
from kubedra.scheduler.scoring import Policy

HELP = command_help(
    "Find the cheapest fleet of candidate node pools on which the workloads meet a goal, by simulating candidates.",
    "Each --pool FILE holds one kubedra.io/v1alpha1 NodePool (its GPU model, MIG layout, sharing); its spec.count is "
    "what the search changes. -f gives the workloads (Pods, Deployments, Jobs, claims and templates, as for "
    "simulate). --goal is what a fleet must meet: p50-pending<=D, p99-pending<=D, max-pending<=D (pending time "
    "from arrival to binding, as simulate reports it) and all-placed, joined by commas. --cost-per-hour POOL=PRICE "
    "prices a node of a pool (default 1 per node).",
    "The search assumes more nodes never make pods wait longer, and is exact over every mix of 0 to --max-nodes "
    "nodes per pool: a fleet that fails settles every smaller one, and no fleet costing as much as the best found "
    "is simulated (a few candidates per round, simulated in parallel on the machine's cores, or as Ray tasks on "
    "the cluster at --ray-address). It stops when every cheaper fleet is known to fail, or after --max-candidates, "
    "when it says so and gives the best found and a lower bound on the cheapest cost (docs/planning.md). "
    "--kubernetes-version and --feature-gates apply to every simulation, as for simulate. Every candidate's result "
    "is cached by its scenario hash (kubedra's version and every option that changes a result included) in "
    "--cache-dir, so an interrupted plan resumes where it stopped and a repeated one simulates nothing.",
    "Output: the explored frontier, one row per candidate by cost (COST/H, P50, P99, MAX pending, PENDING pods, "
    "MEETS), then the answer and what it assumed; -o json|yaml the same as a Plan document.",
    examples=[
        "kubedra plan -f examples/plan/workloads.yaml --pool examples/plan/l4.yaml --pool examples/plan/a100.yaml "
        "--goal 'p99-pending<=5m' --cost-per-hour l4=0.8 --cost-per-hour a100=3.7 --max-nodes 8",
        "kubedra plan -f examples/plan/workloads.yaml --pool examples/plan/a100.yaml --goal all-placed "
        "--max-nodes 8 -o json",
    ],
    exit_status="0 a fleet meets the goal, 1 none up to --max-nodes does (or none found within "
    "--max-candidates), 2 bad input.",
)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")


def _workload_text(paths: list[str]) -> str:
    texts: list[str] = []
    for name in paths:
        path = Path(name)
        manifests = (".yaml", ".yml", ".json")
        files = sorted(p for p in path.rglob("*") if p.suffix in manifests) if path.is_dir() else [path]
        texts.extend(_read_text(f) for f in files)
    return "\n---\n".join(texts)


def _pool(path: Path) -> dict[str, Any]:
    import yaml

    try:
        docs = [d for d in yaml.safe_load_all(_read_text(path)) if d is not None]
    except yaml.YAMLError as exc:
        fail(f"{path}: {exc}")
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "NodePool":
        fail(f"{path}: must hold exactly one NodePool")
    return docs[0]


def _costs(pools: list[dict[str, Any]], prices: list[str]) -> tuple[float, ...]:
    names = [str(p.get("metadata", {}).get("name", "")) for p in pools]
    cost = dict.fromkeys(names, 1.0)
    for item in prices:
        name, _, price = item.partition("=")
        if name not in cost:
            fail(f"--cost-per-hour {item!r}: no pool named {name!r} (pools: {', '.join(names)})")
        try:
            cost[name] = float(price)
        except ValueError:
            fail(f"--cost-per-hour {item!r}: the price must be a number, e.g. {name}=3.7")
        if not cost[name] >= 0:
            fail(f"--cost-per-hour {item!r}: the price must not be negative")
    return tuple(cost[n] for n in names)


def _check_inputs(probe: Any) -> None:
    """Every input problem before the first simulation, with the loader's messages and simulate's checks."""
    import yaml

    from kubedra.objects.errors import InvalidInputError
    from kubedra.objects.load import load_text
    from kubedra.sim.validation import selector_problems

    try:
        loaded = load_text(yaml.safe_dump_all(probe.documents()) + "---\n" + probe.workloads, source="plan")
        if bad_selectors := selector_problems(loaded, probe.features):
            raise InvalidInputError(bad_selectors)
    except InvalidInputError as exc:
        fail_invalid(exc)


class Runner:
    """Runs candidates: cached results first, the rest on local worker processes or as Ray tasks."""

    def __init__(self, cache: Path, workers: int, ray_address: str | None, progress: Any) -> None:
        self.cache = cache
        self.workers = workers
        self.ray_address = ray_address
        self.progress = progress
        self.simulated = 0
        self.cached = 0
        cache.mkdir(parents=True, exist_ok=True)

    def _load(self, key: str) -> dict[str, Any] | None:
        path = self.cache / f"{key}.json"
        try:
            return dict(json.loads(path.read_text()))
        except (OSError, ValueError):
            return None

    def _store(self, key: str, result: dict[str, Any]) -> None:
        path = self.cache / f"{key}.json"
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(result))
        partial.replace(path)  # whole or absent: an interrupted plan never reads half a result

    def run(self, candidates: Sequence[Any]) -> list[dict[str, Any]]:
        from kubedra.plan.candidate import simulate_candidate

        results: dict[int, dict[str, Any]] = {}
        todo: list[int] = []
        for i, candidate in enumerate(candidates):
            found = self._load(candidate.key())
            if found is None:
                todo.append(i)
            else:
                results[i] = found
                self.cached += 1
        if todo and self.ray_address is not None:
            import ray

            if not ray.is_initialized():
                ray.init(address=None if self.ray_address == "local" else self.ray_address, log_to_driver=False)
            remote = ray.remote(simulate_candidate)
            refs = {remote.remote(candidates[i]): i for i in todo}
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                i = refs[ready[0]]
                self._done(i, candidates[i], ray.get(ready[0]), results)
        elif todo:
            from concurrent.futures import ProcessPoolExecutor, as_completed

            if self.workers <= 1 or len(todo) == 1:
                for i in todo:
                    self._done(i, candidates[i], simulate_candidate(candidates[i]), results)
            else:
                with ProcessPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
                    futures = {pool.submit(simulate_candidate, candidates[i]): i for i in todo}
                    for future in as_completed(futures):
                        i = futures[future]
                        self._done(i, candidates[i], future.result(), results)
        return [results[i] for i in range(len(candidates))]

    def _done(self, i: int, candidate: Any, result: dict[str, Any], results: dict[int, dict[str, Any]]) -> None:
        self._store(candidate.key(), result)
        results[i] = result
        self.simulated += 1
        if self.progress is not None:
            self.progress()


def plan_document(names: list[str], search: Any, results: dict[Any, dict[str, Any]], goal: Any, outcome: Any,
                  assumptions: list[str]) -> dict[str, Any]:
    answer = outcome.answer
    frontier = []
    for fleet in sorted(search.explored, key=lambda f: (search.cost(f), sum(f), f)):
        result = results[fleet]
        frontier.append({
            "fleet": dict(zip(names, fleet, strict=True)),
            "costPerHour": round(search.cost(fleet), 6),
            "meetsGoal": search.explored[fleet],
            "pendingTime": result["pendingTime"],
            "pods": result["pods"],
            "gpus": result["gpus"],
            "stranded": result["stranded"],
        })
    return {
        "apiVersion": "kubedra.io/v1alpha1",
        "kind": "Plan",
        "goal": goal.text,
        "answer": None if answer is None else {"fleet": dict(zip(names, answer, strict=True)),
                                               "costPerHour": round(search.cost(answer), 6)},
        "search": {
            "exact": outcome.exact,
            "candidatesEvaluated": outcome.evaluated,
            "lowerBoundCostPerHour": None if outcome.lower_bound is None else round(outcome.lower_bound, 6),
        },
        "assumptions": assumptions,
        "frontier": frontier,
    }


def answer_lines(document: dict[str, Any], goal: str, max_nodes: int, max_candidates: int) -> list[str]:
    """The answer in words: proven cheapest, or the best found within --max-candidates and the lower bound."""
    search, answer = document["search"], document["answer"]
    count = search["candidatesEvaluated"]
    evaluated = f"{count} candidate{'' if count == 1 else 's'} evaluated"
    bound = search["lowerBoundCostPerHour"]
    if answer is None:
        if search["exact"]:
            return [f"No fleet up to {max_nodes} nodes per pool meets {goal} ({evaluated})."]
        return [f"No fleet meeting {goal} found within --max-candidates {max_candidates}; one would cost at least "
                f"{bound:g}/h."]
    fleet = ", ".join(f"{n}={c}" for n, c in answer["fleet"].items())
    if search["exact"]:
        head = (f"Cheapest fleet meeting {goal}: {fleet} at {answer['costPerHour']:g}/h "
                f"(exact: every cheaper fleet fails; {evaluated})")
    else:
        head = (f"Best fleet found meeting {goal}: {fleet} at {answer['costPerHour']:g}/h, not proven cheapest: "
                f"--max-candidates {max_candidates} reached; the cheapest costs at least {bound:g}/h")
    return [head, "Assumed: " + "; ".join(document["assumptions"])]


def frontier_table(names: list[str], document: dict[str, Any]) -> Table:
    table = Table([*(Column(n.upper()) for n in names), Column("COST/H"), Column("P50"), Column("P99"), Column("MAX"),
                   Column("PENDING"), Column("GPU-USE", wide=True), Column("STRANDED", wide=True), Column("MEETS")])
    for row in document["frontier"]:
        w = row["pendingTime"]
        table.add(*(str(row["fleet"][n]) for n in names), f"{row['costPerHour']:g}", w["p50"], w["p99"], w["max"],
                  str(row["pods"]["pending"]), f"{row['gpus']['capacityInUsePercent']:g}%", str(row["stranded"]),
                  "yes" if row["meetsGoal"] else "no")
    return table


def register(app: typer.Typer) -> None:
    @app.command("plan", help=HELP, no_args_is_help=True)
    def plan_command(
        files: Annotated[list[str], typer.Option("-f", "--filename", help="Workload manifests (file or directory); "
                                                 "repeatable.")],
        pools: Annotated[list[Path], typer.Option("--pool", metavar="FILE", help="A candidate NodePool; "
                                                  "repeatable.")],
        goal_text: Annotated[str, typer.Option("--goal", help="e.g. 'p99-pending<=5m' or "
                                               "'max-pending<=1h,all-placed'.")],
        cost_per_hour: Annotated[list[str] | None, typer.Option("--cost-per-hour", metavar="POOL=PRICE",
                                                                help="Price of one node of a pool per hour.")] = None,
        max_nodes: Annotated[int, typer.Option("--max-nodes", min=1, max=100_000,
                                               help="The most nodes of one pool the search tries.")] = 64,
        max_candidates: Annotated[int, typer.Option("--max-candidates", min=1, help="The most candidates the "
                                                    "search evaluates; past it the answer is the best found, "
                                                    "not proven cheapest.")] = 200,
        workers: Annotated[int | None, typer.Option("--workers", min=1, help="Local worker processes "
                                                    "(default: one per core).")] = None,
        ray_address: Annotated[str | None, typer.Option("--ray-address", help="Run candidates as Ray tasks on this "
                                                        "cluster (local: a Ray instance started here).")] = None,
        cache_dir: Annotated[Path, typer.Option("--cache-dir", help="Where results are kept by scenario hash.")] = (
            Path(".kubedra-plan-cache")),
        policy: PolicyOption = Policy.KUBE_SCHEDULER,
        seed: SeedOption = 0,
        kubernetes_version: VersionOption = "1.37",
        feature_gates: GatesOption = "",
        output: OutputOption = None,
    ) -> None:
        from kubedra.plan.candidate import Candidate
        from kubedra.plan.goal import GoalError, parse_goal
        from kubedra.plan.search import Search

        try:
            goal = parse_goal(goal_text)
        except GoalError as exc:
            fail(str(exc))
        documents = [_pool(p) for p in pools]
        names = [str(d.get("metadata", {}).get("name", "")) for d in documents]
        if len(set(names)) != len(names):
            fail(f"--pool: two pools share a name ({', '.join(names)})")
        costs = _costs(documents, cost_per_hour or [])
        features = parse_features(kubernetes_version, feature_gates)
        workload = _workload_text(files)
        pool_texts = tuple(json.dumps(d, sort_keys=True) for d in documents)
        _check_inputs(Candidate((1,) * len(documents), pool_texts, workload, seed, policy.value, features))
        results: dict[Any, dict[str, Any]] = {}
        console = stderr_console()
        from rich.progress import MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("planning"), MofNCompleteColumn(), TextColumn("candidates simulated"),
                      TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("plan", total=None)
            runner = Runner(cache_dir, workers or os.cpu_count() or 1, ray_address, lambda: bar.advance(task))

            def evaluate(fleets: Sequence[tuple[int, ...]]) -> list[bool]:
                candidates = [Candidate(f, pool_texts, workload, seed, policy.value, features) for f in fleets]
                found = runner.run(candidates)
                for fleet, result in zip(fleets, found, strict=True):
                    results[fleet] = result
                return [goal.met(r) for r in found]

            search = Search(costs, max_nodes, evaluate, width=min(runner.workers, 8),
                            max_candidates=max_candidates)
            outcome = search.run()
        answer = outcome.answer
        assumptions = [
            "meeting the goal is monotone in each pool's node count",
            f"counts searched from 0 to {max_nodes} per pool",
            f"policy {policy.value}, seed {seed}, Kubernetes {features.release}"
            + (f" with --feature-gates {feature_gates}" if feature_gates else ""),
            "cost = nodes x price per node-hour" + ("" if cost_per_hour else " (every node priced 1)"),
            f"{runner.simulated} candidates simulated, {runner.cached} read from {cache_dir}",
        ]
        document = plan_document(names, search, results, goal, outcome, assumptions)
        fmt = output or default_format()
        if fmt in TABLE_FORMATS:
            print_table(frontier_table(names, document), fmt)
            print_lines(["", *answer_lines(document, goal.text, max_nodes, max_candidates)])
        elif fmt is OutputFormat.name:
            print_names(f"nodepool/{n}" for n in names)
        else:
            print_data(document, fmt)
        raise typer.Exit(EXIT_OK if answer is not None else EXIT_UNSCHEDULABLE)
