"""My files' limits (apps/runs/engine/files.py): space counted in the disk's blocks, a number of
files, and the folder's totals kept in a hidden file rather than listed on every write."""
from __future__ import annotations

import os
import threading

import pytest

from apps.runs.engine.files import PARTIAL, USAGE, FileRefused, UserFiles, Usage


@pytest.fixture
def files(tmp_path):
    return UserFiles(tmp_path / "ada", max_bytes=2**20)


def fill(files: UserFiles, count: int) -> None:
    """``count`` one-byte files put straight on disk (no kept totals yet), as a full folder."""
    files.folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (files.folder / f"f{i:04d}.pt").write_bytes(b"x")


def test_a_one_byte_file_costs_a_whole_block(files):
    files.save("one.pt", b"1")
    block = os.statvfs(files.folder).f_frsize
    assert files.usage() == Usage(block, 1) == files.scan()
    assert files.find("one.pt").size == 1  # the list still shows its own size


def test_the_1001st_new_file_is_refused_naming_the_count_and_the_setting_and_nothing_is_written(files):
    fill(files, 1000)
    with pytest.raises(FileRefused) as refused:
        files.save("new.pt", b"n")
    assert str(refused.value) == (
        "'new.pt' is not saved: you already have 1000 files in My files, the most you can keep "
        "(CODEFYUI_USER_FILES_MAX_FILES is 1000). Delete files you no longer need on the My files page, "
        "then try again (saving over a file of the same name still works).")
    assert files.find("new.pt") is None and len(files.list()) == 1000
    assert not [n for n in os.listdir(files.folder) if n.startswith(PARTIAL)]
    assert files.usage().files == 1000


def test_saving_over_a_file_at_the_limit_is_allowed(files):
    files.max_files = 2
    files.save("a.pt", b"a")
    files.save("b.pt", b"b")
    files.save("a.pt", b"a longer a")
    assert files.path("a.pt").read_bytes() == b"a longer a"
    assert files.usage() == files.scan() and files.usage().files == 2


def test_the_kept_usage_matches_a_scan_after_saves_replacements_and_deletes(files):
    block = files.block_size()
    files.save("a.pt", b"a" * (3 * block))
    files.save("b.pt", b"b")
    files.save("c.pt", (b"c" * 1000 for _ in range(9)), size=9000)
    assert files.usage() == files.scan() == Usage(3 * block + block + files.allocated(9000), 3)
    files.save("a.pt", b"a")          # a replacement gives back what the old file took
    assert files.usage() == files.scan() == Usage(2 * block + files.allocated(9000), 3)
    assert files.delete("b.pt") and not files.delete("b.pt")
    assert files.usage() == files.scan() == Usage(block + files.allocated(9000), 2)


def test_a_refused_write_leaves_the_kept_usage_as_it_was(files):
    files.max_bytes = 2 * files.block_size()
    files.save("a.pt", b"a")
    with pytest.raises(FileRefused, match="does not fit"):
        files.save("b.pt", b"b" * (2 * files.block_size()))
    assert files.usage() == files.scan() == Usage(files.block_size(), 1)


@pytest.mark.parametrize("kept", [None, "", "not json", '{"bytes": 1}', '{"bytes": -5, "files": 1}', "[1, 2]"])
def test_a_missing_or_unreadable_usage_file_is_recomputed_and_written(files, kept):
    files.save("a.pt", b"a")
    files.save("b.pt", b"b" * 5000)
    usage = files.folder / USAGE
    if kept is None:
        usage.unlink()
    else:
        usage.write_text(kept)
    assert files.usage() == files.scan() == Usage(files.block_size() + files.allocated(5000), 2)
    assert usage.exists() and files.usage() == files.scan()
    files.save("c.pt", b"c")  # a write after the recompute keeps counting from it
    assert files.usage() == files.scan()


def test_a_folder_of_files_from_before_the_kept_usage_is_counted_on_first_use(files):
    fill(files, 3)
    assert files.usage() == Usage(3 * files.block_size(), 3)
    assert (files.folder / USAGE).exists()


def test_find_and_delete_take_only_the_students_own_files(files, tmp_path):
    files.save("a.pt", b"a")
    os.symlink(files.folder / "a.pt", files.folder / "link.pt")
    for name in (".lock", USAGE, "../ada/a.pt", "link.pt", "missing.pt", ""):
        assert files.find(name) is None and not files.delete(name)
    assert files.find("a.pt").name == "a.pt"
    assert files.usage() == Usage(files.block_size(), 1)


def test_no_folder_yet_is_empty(files):
    assert files.usage() == Usage() and files.list() == [] and files.find("a.pt") is None
    assert not files.delete("a.pt") and not files.folder.exists()


def test_writers_and_deleters_at_once_keep_the_totals_right(files):
    """Two runs of one student (here threads, each with its own UserFiles) take turns on the lock."""
    def work(worker: int) -> None:
        mine = UserFiles(files.folder, files.max_bytes)
        for i in range(15):
            mine.save(f"w{worker}-{i}.pt", b"x" * (i * 700))
            mine.save("shared.pt", b"s" * (worker + 1))
            if i % 3 == 0:
                mine.delete(f"w{worker}-{i}.pt")

    files.folder.mkdir(parents=True)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert files.usage() == files.scan() and files.usage().files == 4 * 10 + 1
