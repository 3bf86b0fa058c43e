"""The gateway's task store: rows written as tasks change, read back after a reopen."""

from pathlib import Path

from argentic_tools.mcp.tasks.task_store import TaskRecord, TaskStore


def _record(task_id: str, created: float = 1000.0, ttl_ms: int | None = 60_000) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        owner="client:alice",
        label=f"label-{task_id}",
        tool="crunch",
        status="working",
        status_message=None,
        created_at=created,
        updated_at=created,
        ttl_ms=ttl_ms,
    )


def test_a_task_is_read_back_as_written_and_as_it_ended(tmp_path: Path) -> None:
    path = tmp_path / "gateway.db"
    store = TaskStore(path)
    store.add(_record("a"))
    store.add(_record("b", created=1001.0))
    ended = _record("a")
    ended.status, ended.status_message, ended.updated_at = "completed", None, 1002.0
    ended.outcome = {"result": {"content": [{"type": "text", "text": "done"}]}}
    store.save(ended)
    store.close()

    again = TaskStore(path)  # what a restarted gateway reads
    read = again.get("a")
    assert read == ended
    assert read is not None and read.terminal
    assert [record.task_id for record in again.unfinished()] == ["b"]
    assert again.get("missing") is None
    again.delete("b")
    assert again.unfinished() == []
    again.close()


def test_expired_tasks_are_purged_and_unlimited_ones_kept() -> None:
    store = TaskStore()
    store.add(_record("short", created=1000.0, ttl_ms=1_000))
    store.add(_record("forever", created=1000.0, ttl_ms=None))
    assert store.get("short") is not None
    assert not _record("short", ttl_ms=1_000).expired(1000.5)
    assert _record("short", ttl_ms=1_000).expired(1001.5)
    assert store.purge(1001.5) == 1
    assert store.get("short") is None
    assert store.get("forever") is not None
    store.close()
