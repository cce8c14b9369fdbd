"""The one interface over both cgroup layouts (sandbox/cgroups.py), on file trees laid out as each layout's.

This machine has cgroup v1, which the code verifier's own tests exercise for real (tests/verifiers/code/
test_resources.py); most users' machines have cgroup v2. Here both layouts are given as plain folders (the files the
kernel would show), so that the choice of layout, the folders made and the files written are checked for each.
"""

from __future__ import annotations

import logging
import os

import pytest

from trl_grpo_ext.verifiers.sandbox import cgroups

MB = 1 << 20


def fake_tree(monkeypatch, mounts, own):
    monkeypatch.setattr(cgroups, "_mounts", lambda: mounts)
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: own)


def test_cgroup_v2_groups_next_to_the_trainers_own(monkeypatch, tmp_path):
    root = tmp_path / "unified"
    slice_ = root / "system.slice"
    (slice_ / "trainer.service").mkdir(parents=True)
    (slice_ / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (slice_ / "cgroup.subtree_control").write_text("cpu memory pids\n")
    fake_tree(monkeypatch, [(str(root), "cgroup2", {"rw"})], {"": "/system.slice/trainer.service"})

    tree = cgroups.CgroupTree()
    folder = slice_ / cgroups.own_folder_name()
    assert tree.version == 2 and tree.layout.parents == (folder,)
    assert (folder / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    tree.weigh(3)
    assert (folder / "cpu.weight").read_text() == "300"

    group = tree.group(memory_bytes=320 * MB, pids=65)
    c0 = folder / "c0"
    assert {p.name: p.read_text() for p in c0.iterdir()} == {
        "memory.max": str(320 * MB), "memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "65",
    }  # fmt: skip
    (c0 / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert group.cpu_s() == 1.5
    (c0 / "cgroup.threads").write_text("")
    (c0 / "cgroup.procs").write_text("")
    fds = group.join_fds()
    assert len(fds) == 1
    os.write(fds[0], b"0")
    os.close(fds[0])
    assert (c0 / "cgroup.procs").read_text() == "0"
    group.bound_memory(64 * MB)  # a dataset row's own limit, for this candidate
    assert (c0 / "memory.max").read_text() == str(64 * MB)
    group.release()  # empty: kept for the next candidate with the same limits, the pool's bound restored
    assert (c0 / "memory.max").read_text() == str(320 * MB)
    assert tree.group(memory_bytes=320 * MB, pids=65) is group
    assert tree.group(memory_bytes=256 * MB, pids=65) is not group

    tree.judge_group(memory_bytes=3 * 4096 * MB, pids=192, cpus=3)  # the judge's: a CPU quota, no group-wide OOM kill
    judge = next(folder.glob("judge*"))
    assert {p.name: p.read_text() for p in judge.iterdir()} == {
        "memory.max": str(3 * 4096 * MB), "memory.swap.max": "0", "pids.max": "192", "cpu.max": "300000 100000",
    }  # fmt: skip


def test_cgroup_v1_one_folder_per_tree_under_the_trainers_own(monkeypatch, tmp_path):
    mounts = [
        (str(tmp_path / "memory"), "cgroup", {"rw", "memory"}),
        (str(tmp_path / "pids"), "cgroup", {"rw", "pids"}),
        (str(tmp_path / "cpu,cpuacct"), "cgroup", {"rw", "cpu", "cpuacct"}),  # co-mounted, as on many systems
        (str(tmp_path / "unified"), "cgroup2", {"rw"}),  # an empty v2 tree beside them, as on this machine
    ]
    own = {"memory": "/jobs/42", "pids": "/", "cpu": "/", "cpuacct": "/", "": "/"}
    (tmp_path / "memory" / "jobs" / "42").mkdir(parents=True)
    (tmp_path / "pids").mkdir()
    (tmp_path / "cpu,cpuacct").mkdir()
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("\n")  # its controllers are bound to v1
    fake_tree(monkeypatch, mounts, own)

    tree = cgroups.CgroupTree()
    name = cgroups.own_folder_name()
    assert tree.version == 1
    assert tree.layout.parents == (
        tmp_path / "memory" / "jobs" / "42" / name, tmp_path / "pids" / name, tmp_path / "cpu,cpuacct" / name,
    )  # fmt: skip
    tree.weigh(2)
    assert (tmp_path / "cpu,cpuacct" / name / "cpu.shares").read_text() == "2048"

    group = tree.group(memory_bytes=320 * MB, pids=65)
    memory, pids, cpu = (parent / "c0" for parent in tree.layout.parents)
    assert (memory / "memory.limit_in_bytes").read_text() == str(320 * MB)
    assert (memory / "memory.memsw.limit_in_bytes").read_text() == str(320 * MB)
    assert (pids / "pids.max").read_text() == "65"
    (cpu / "cpuacct.usage").write_text("250000000\n")
    assert group.cpu_s() == 0.25
    for folder in (memory, pids, cpu):
        (folder / "cgroup.procs").write_text("")
    fds = group.join_fds()
    assert len(fds) == 3  # one per tree: cpu and cpuacct share theirs
    for fd in fds:
        os.close(fd)
    (pids / "tasks").write_text(f"{os.getpid()}\n")
    assert group.threads() == [os.getpid()] and group.runnable()  # this test is running

    tree.judge_group(memory_bytes=3 * 4096 * MB, pids=192, cpus=3)
    judge = {parent.parent.name: next(parent.glob("judge*")) for parent in tree.layout.parents}
    assert (judge["42"] / "memory.limit_in_bytes").read_text() == str(3 * 4096 * MB)
    assert (judge["pids"] / "pids.max").read_text() == "192"
    assert {p.name: p.read_text() for p in judge["cpu,cpuacct"].iterdir()} == {
        "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "300000",
    }  # fmt: skip

    # v1 refuses a memory limit above the memory+swap one: lowering writes memory first, raising memory+swap first.
    written = []
    monkeypatch.setattr(cgroups, "_write", lambda path, value: written.append((path.name, value)))
    group.bound_memory(64 * MB)
    group.bound_memory(320 * MB)
    assert written == [
        ("memory.limit_in_bytes", str(64 * MB)), ("memory.memsw.limit_in_bytes", str(64 * MB)),
        ("memory.memsw.limit_in_bytes", str(320 * MB)), ("memory.limit_in_bytes", str(320 * MB)),
    ]  # fmt: skip


def test_without_cgroups_the_verifier_refuses_unless_asked_by_name(monkeypatch, tmp_path, caplog):
    fake_tree(monkeypatch, [], {"": "/"})
    monkeypatch.setattr(cgroups, "_TREE", None)
    monkeypatch.setattr(cgroups, "_TREE_ERROR", None)
    with pytest.raises(RuntimeError) as refused:
        cgroups.candidate_cgroups(True)
    message = str(refused.value)
    assert "no cgroup v2 tree is mounted" in message and "'memory' is not mounted" in message
    assert "cgroup=False" in message
    with caplog.at_level(logging.WARNING, logger="trl_grpo_ext.verifiers"):
        assert cgroups.candidate_cgroups(False) is None
    assert "memfd" in caplog.text and "wall-clock" in caplog.text


def test_a_verifier_option_that_is_not_a_bool_is_refused():
    from trl_grpo_ext.verifiers import get_verifier

    with pytest.raises(ValueError, match="cgroup='yes'"):
        get_verifier("code", cgroup="yes")


def test_only_this_pid_namespaces_dead_trainings_lose_their_folders(tmp_path):
    """A pid means a process only in its PID namespace: a training in another one (a container, `unshare --pid`) whose
    pid is not alive here must keep its groups."""
    dead = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 100_000  # no process here has it
    ours = cgroups.own_folder_name().split("-")[1]
    other = str(int(ours) + 1)  # namespaces are inodes of the nsfs: another one's differs
    for name in (f"trl_grpo_ext-{ours}-{dead}", f"trl_grpo_ext-{other}-{dead}", f"trl_grpo_ext-{ours}-{os.getpid()}"):
        (tmp_path / name / "c0").mkdir(parents=True)
        (tmp_path / name / "judge1").mkdir()
    cgroups._remove_left_by_dead_processes(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {f"trl_grpo_ext-{other}-{dead}", cgroups.own_folder_name()}
    assert (tmp_path / f"trl_grpo_ext-{other}-{dead}" / "c0").is_dir()
    assert (tmp_path / f"trl_grpo_ext-{other}-{dead}" / "judge1").is_dir()
