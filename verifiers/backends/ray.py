"""The Ray backend: each batch split across Ray actors, each running the local verifier on its own node.

`get_verifier(name, backend="ray", ray_address=..., **options)` returns a `RayVerifier`. Every actor builds the
verifier registered as `name` with the same options, exactly as `backend="local"` builds it (same worker pools,
same isolation, sized to the actor's node), so a verdict does not depend on where it was computed; the batch is cut
into contiguous slices, one per actor (a GRPO group stays together, so its repeated answers are still verified once).
Verification then scales with the CPU nodes of the cluster while training runs elsewhere.

An actor that dies has its slice retried once on a fresh actor; if that one dies too, the slice's items score None
with `internal_error: ...`. An exception raised inside an actor's `verify_batch` (a broken verifier) is not retried:
its items score None with that exception as reason. A cluster that cannot be reached fails at construction.

Ray is an optional dependency (`pip install trl-grpo-ext[ray]`), imported only here.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from typing import Any

from ..core.cache import BatchStats
from ..core.contract import VerificationResult, Verifier, internal_error
from .local import build_verifier

logger = logging.getLogger("trl_grpo_ext.verifiers.ray")

INSTALL_HINT = "pip install trl-grpo-ext[ray]"
CONNECT_TIMEOUT_S = 10.0  # to open a TCP connection to the cluster's address before asking Ray to join it
READY_TIMEOUT_S = 120.0  # for the actors to be placed and to build their verifiers


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            f"backend='ray' needs Ray, which is not installed. Install it with `{INSTALL_HINT}`, or use "
            "backend='local'."
        ) from exc
    return ray


class VerifierActor:
    """What each Ray actor holds: the verifier built on the actor's node, exactly as the local backend builds it."""

    def __init__(self, name: str, obj: Any, options: dict[str, Any]):
        self.verifier = build_verifier(name, obj, options)

    def where(self) -> str:
        return f"{socket.gethostname()} (pid {os.getpid()})"

    def verify_batch(self, completions: list[str], references: list[Any]) -> list[VerificationResult]:
        return self.verifier.verify_batch(completions, references)

    def verify_batch_with_stats(
        self, completions: list[str], references: list[Any]
    ) -> tuple[list[VerificationResult], BatchStats | None]:
        """The verifier's own `verify_batch_with_stats` (math, code), or its results with no stats (None)."""
        with_stats = getattr(self.verifier, "verify_batch_with_stats", None)
        if callable(with_stats):
            return with_stats(completions, references)
        return self.verifier.verify_batch(completions, references), None

    def start(self) -> None:
        self.verifier.start(wait=True)

    def close(self) -> None:
        self.verifier.close()


class RayVerifier(Verifier):
    """Verifier `name` on Ray actors: one per alive node with CPUs, or `actors` spread over the cluster.

    The verifier inside each actor sizes its own pools to its node, as it does locally, so an actor reserves no Ray
    CPU (two reward functions may share the nodes). Every training process (WORLD_SIZE of them) has its own actors,
    so an actor's default pool is the node's cores divided by WORLD_SIZE times the actors it has on that node (the
    actor's LOCAL_WORLD_SIZE); pass `n_workers` (math) or `workers` (code) to size it yourself. Built with
    `get_verifier(name, backend="ray", ...)`.
    """

    def __init__(
        self, name: str, obj: Any, options: dict[str, Any], address: str | None = None, actors: int | None = None
    ):
        if actors is not None and (isinstance(actors, bool) or not isinstance(actors, int) or actors < 1):
            raise ValueError(f"ray_actors={actors!r} must be a positive integer, or None for one actor per node.")
        self.ray = import_ray()
        self.name = name
        self._spec = (name, obj, options)
        self._lock = threading.Lock()
        connect(self.ray, address)
        self._placements, nodes = self._plan(actors)
        # Every training process has its own actors on the nodes: a verifier's default pool size (the node's cores
        # divided by LOCAL_WORLD_SIZE, as locally) then gives each its share instead of all the cores.
        self._sharing = _training_processes() * -(-len(self._placements) // nodes)
        self._actors = [self._new_actor(placement) for placement in self._placements]
        self.locations = self._wait_until_ready(self._actors)

    # -- public API ---------------------------------------------------------------------------------------------
    def verify_batch(self, completions: Sequence[str], references: Sequence[Any]) -> list[VerificationResult]:
        """One contiguous slice per actor, verified in parallel; results in the batch's order."""
        return self.verify_batch_with_stats(completions, references)[0]

    def verify_batch_with_stats(
        self, completions: Sequence[str], references: Sequence[Any]
    ) -> tuple[list[VerificationResult], BatchStats | None]:
        """`verify_batch`, and what the actors did (`BatchStats`), summed over the slices that returned stats: so the
        reward adapter logs `dedup_rate`, `cache_hit_rate` and the item latencies as it does for the local backend.
        Duplicates are counted within each slice (a group stays in one slice). None when the verifier keeps no stats
        or no slice returned any (every actor failed)."""
        if len(completions) != len(references):
            raise ValueError(
                f"verify_batch got {len(completions)} completions and {len(references)} references; "
                "pass one reference per completion."
            )
        if not self._actors:
            raise RuntimeError(f"the Ray verifier {self.name!r} is closed; build a new one with get_verifier.")
        completions, references = list(completions), list(references)
        slices = _slices(len(completions), len(self._actors))
        calls = [
            (s, i, self._actor(i).verify_batch_with_stats.remote(completions[s], references[s]))
            for i, s in enumerate(slices)
        ]
        results: list[VerificationResult] = [None] * len(completions)  # type: ignore[list-item]
        slice_stats: dict[int, BatchStats] = {}  # slice start -> its stats, merged in the batch's order
        died = []
        for s, i, ref in calls:
            outcome = self._get(ref, len(completions[s]))
            if isinstance(outcome, str):
                logger.warning("verifier %r: a Ray actor failed (%s); retrying its slice once", self.name, outcome)
                died.append((s, i))
            else:
                results[s], stats = outcome
                if stats is not None:
                    slice_stats[s.start] = stats
        retries = [
            (s, self._replace(i).verify_batch_with_stats.remote(completions[s], references[s])) for s, i in died
        ]
        for s, ref in retries:
            outcome = self._get(ref, len(completions[s]))
            if isinstance(outcome, str):
                message = f"ray actor died twice on this batch slice (retried once): {outcome}"
                outcome = ([internal_error(message)] * len(completions[s]), None)
            results[s], stats = outcome
            if stats is not None:
                slice_stats[s.start] = stats
        return results, merged_stats([slice_stats[start] for start in sorted(slice_stats)])

    def start(self, wait: bool = True) -> None:
        refs = [actor.start.remote() for actor in self._actors]
        if wait:
            self.ray.get(refs)

    def close(self) -> None:
        """Close the verifiers on the actors and end the actors; the Ray connection stays as it was."""
        with self._lock:
            actors, self._actors = self._actors, []
        for actor in actors:
            try:
                self.ray.get(actor.close.remote(), timeout=60)
            except Exception:  # an actor that is gone, or a close that hangs: end it anyway
                pass
            self.ray.kill(actor)

    # -- actors -------------------------------------------------------------------------------------------------
    def _plan(self, actors: int | None) -> tuple[list[Any], int]:
        """A scheduling strategy per actor (pinned to each node with CPUs, or spread when a number is asked for), and
        the number of nodes with CPUs."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n["NodeID"] for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]
        if not nodes:
            raise RuntimeError(
                "the Ray cluster has no alive node with a CPU to run verifier actors on; start CPU workers with "
                "`ray start --address=<head>:6379 --num-cpus=<cores>`."
            )
        if actors is not None:
            return ["SPREAD"] * actors, len(nodes)
        return [NodeAffinitySchedulingStrategy(node, soft=True) for node in nodes], len(nodes)

    def _new_actor(self, placement: Any):
        remote = self.ray.remote(VerifierActor).options(
            num_cpus=0,
            scheduling_strategy=placement,
            runtime_env={"env_vars": {"LOCAL_WORLD_SIZE": str(self._sharing)}},
        )
        return remote.remote(*self._spec)

    def _wait_until_ready(self, actors: list[Any]) -> list[str]:
        try:
            return self.ray.get([actor.where.remote() for actor in actors], timeout=READY_TIMEOUT_S)
        except self.ray.exceptions.GetTimeoutError:
            for actor in actors:
                self.ray.kill(actor)
            raise RuntimeError(
                f"Ray did not start {len(actors)} verifier actors within {READY_TIMEOUT_S:.0f} s; see `ray status` "
                "for the cluster's nodes, and check that trl-grpo-ext is installed on every node."
            ) from None
        except self.ray.exceptions.RayError as exc:  # the verifier could not be built on an actor (a bad option)
            for actor in actors:
                self.ray.kill(actor)
            raise ValueError(f"verifier {self.name!r} could not be built on a Ray actor: {_cause(exc)}") from None

    def _actor(self, index: int):
        with self._lock:
            return self._actors[index]

    def _replace(self, index: int):
        """A fresh actor in place of a dead one, on the same node if it is still there."""
        with self._lock:
            self.ray.kill(self._actors[index])
            self._actors[index] = self._new_actor(self._placements[index])
            return self._actors[index]

    def _get(self, ref: Any, size: int) -> tuple[list[VerificationResult], BatchStats | None] | str:
        """A slice's results and stats, internal errors (no stats) when its verify_batch raised or broke, or why its
        actor is gone."""
        try:
            reply = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            return [internal_error(f"on a Ray actor: {_cause(exc)}")] * size, None
        except self.ray.exceptions.RayError as exc:  # the actor (or its node) died, or its result was lost
            return _cause(exc)
        results, stats = reply if isinstance(reply, tuple) and len(reply) == 2 else (reply, None)
        if not isinstance(stats, BatchStats | None):
            stats = None
        if not isinstance(results, list) or len(results) != size:
            return [internal_error(f"a Ray actor returned {type(results).__name__}, not {size} results")] * size, None
        return results, stats


def merged_stats(parts: list[BatchStats]) -> BatchStats | None:
    """The stats of several slices of one batch as one: counts summed, item times in the slices' order."""
    if not parts:
        return None
    return BatchStats(
        items=sum(p.items for p in parts),
        duplicates=sum(p.duplicates for p in parts),
        cache_lookups=sum(p.cache_lookups for p in parts),
        cache_hits=sum(p.cache_hits for p in parts),
        item_seconds=[seconds for p in parts for seconds in p.item_seconds],
    )


def connect(ray: Any, address: str | None) -> None:
    """Join the cluster at `address` (None: the one this process uses already, else RAY_ADDRESS, else a new local
    one). An address that does not accept connections fails within CONNECT_TIMEOUT_S, not after Ray's retries."""
    target = address or os.environ.get("RAY_ADDRESS")
    if target and target not in ("auto", "local"):
        _check_reachable(target)
    if ray.is_initialized():  # one cluster per process: Ray's own rule
        current = ray.get_runtime_context().gcs_address
        if address not in (None, "auto") and "://" not in address and address != current:
            raise ValueError(
                f"this process is already connected to the Ray cluster at {current!r}, not ray_address={address!r}; "
                "a process joins one cluster. Pass ray_address=None to use it."
            )
        return
    try:
        ray.init(address=address)
    except Exception as exc:
        raise ConnectionError(
            f"could not join the Ray cluster at {target or 'a new local cluster'!r}: {type(exc).__name__}: {exc}. "
            "Check ray_address (host:port of the head, as printed by `ray start --head`) and that Ray's versions "
            "match, or use backend='local'."
        ) from exc


def _check_reachable(address: str) -> None:
    host_port = address.split("://", 1)[-1].rstrip("/")
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"ray_address={address!r} is not host:port (for example 10.0.0.1:6379 or ray://10.0.0.1:10001)."
        )
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address!r}: {exc}. Start its head with `ray start --head --port={port}`, "
            "check the address and the firewall, or use backend='local'."
        ) from None


def _training_processes() -> int:
    """WORLD_SIZE of this training (set by `accelerate launch` and `torchrun`), 1 otherwise."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _slices(n: int, parts: int) -> list[slice]:
    """Contiguous, non-empty slices of range(n), at most `parts`, sizes differing by at most one."""
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"
