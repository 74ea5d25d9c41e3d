"""A student's own files (My files, apps/runs/engine/files.py): names that stay in the folder,
the quota (counted in the file system's blocks), and whole writes only. The kept usage and the
file count: tests/runs/test_user_files.py."""
from __future__ import annotations

import os

import pytest
import torch

from apps.graphs import document
from apps.runs.engine import RunOptions, execute, plan_run
from apps.runs.engine.files import PARTIAL, FileRefused, UserFiles, clean_name, megabytes
from tests.runs.worker_nodes import saver_graph


@pytest.fixture
def block(tmp_path):
    return os.statvfs(tmp_path).f_frsize


@pytest.fixture
def files(tmp_path, block):
    return UserFiles(tmp_path / "7", max_bytes=2 * block)


def test_a_saved_file_is_read_back_listed_and_counted(files, block):
    files.save("model.pt", b"x" * 300)
    assert files.path("model.pt").read_bytes() == b"x" * 300
    assert [(f.name, f.size) for f in files.list()] == [("model.pt", 300)]
    assert files.used() == block  # the disk's whole block, not 300 bytes


@pytest.mark.parametrize("name, says", [
    ("../x", "leaves your files"),
    ("a/../../x.pt", "leaves your files"),
    ("/etc/passwd", "is a path on the server"),
    ("C:\\Windows\\x.pt", "is a path on the server"),
    ("models/x.pt", "names a folder"),
    (".hidden", "not a file name"),
    ("a*b.pt", "not a file name"),
    ("", "is empty"),
])
def test_a_name_that_leaves_the_folder_is_refused_naming_the_param(files, name, says):
    for attempt in (lambda: files.path(name, "path"), lambda: files.save(name, b"1", "path")):
        with pytest.raises(FileRefused) as refused:
            attempt()
        assert says in str(refused.value) and str(refused.value).startswith("'path'")
    assert not (files.folder.parent / "x").exists()


def test_a_link_out_of_the_folder_is_refused_for_reading_and_writing(files, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    files.folder.mkdir(parents=True)
    os.symlink(secret, files.folder / "link.pt")
    with pytest.raises(FileRefused, match="leaves your files"):
        files.path("link.pt")
    with pytest.raises(FileRefused, match="leaves your files"):
        files.save("link.pt", b"overwritten")
    assert secret.read_text() == "not yours"
    assert files.list() == []  # a link is never listed, downloaded or deleted


def test_a_write_past_the_quota_is_refused_and_leaves_no_file(files, block):
    files.save("a.pt", b"a" * (block + 1))
    with pytest.raises(FileRefused, match=rf"'b.pt' \({megabytes(block)}\) does not fit in your files: "
                                          rf"{megabytes(2 * block)}"):
        files.save("b.pt", b"b" * 500)
    assert [f.name for f in files.list()] == ["a.pt"]
    assert sorted(os.listdir(files.folder)) == [".lock", ".usage", "a.pt"]


def test_streamed_chunks_past_the_quota_stop_and_leave_no_half_file(files, block):
    with pytest.raises(FileRefused, match="at least"):
        files.save("big.pt", (b"x" * block for _ in range(5)))
    assert files.list() == [] and not list(files.folder.glob(PARTIAL + "*"))


def test_replacing_a_file_counts_only_the_new_size(files, block):
    files.save("m.pt", b"1" * (block + 800))
    files.save("m.pt", b"2" * (block + 900))
    assert files.path("m.pt").read_bytes() == b"2" * (block + 900)


def test_a_failed_write_keeps_the_old_file_whole(files):
    files.save("m.pt", b"old")

    def broken():
        yield b"new, half"
        raise OSError("disk full")

    with pytest.raises(FileRefused, match=r"'m.pt' could not be written on the server \(disk full\)"):
        files.save("m.pt", broken())
    assert files.path("m.pt").read_bytes() == b"old"
    assert not list(files.folder.glob(PARTIAL + "*"))


def test_a_write_cleans_what_an_ended_write_left(files):
    files.folder.mkdir(parents=True)
    (files.folder / f"{PARTIAL}dead").write_bytes(b"z" * 900)
    files.save("m.pt", b"1" * 500)
    assert sorted(os.listdir(files.folder)) == [".lock", ".usage", "m.pt"]


def test_a_missing_file_says_where_to_put_it(files):
    with pytest.raises(FileRefused, match="no such file in My files"):
        files.path("nothing.pt", "path")


def test_uploaded_names_are_made_safe():
    assert clean_name("C:\\Users\\ada\\my model (2).pt") == "my model _2_.pt"
    assert clean_name("../../.bashrc") == "bashrc"
    assert clean_name("...") == "upload.pt"
    assert clean_name("-rf .pt") == "rf .pt"


def test_sizes_read_as_people_write_them():
    assert (megabytes(500), megabytes(20_000), megabytes(3 * 2**20), megabytes(2**20 * 1.5)) == ("500 bytes", "20 KB", "3 MB", "1.5 MB")


# -- through the engine: the run's options carry the folder and the quota ------------------------

def run(doc, **options):
    return execute(plan_run(document.normalise(doc)), RunOptions(run_id="r1", **options), lambda event: None)


def test_a_run_saves_in_the_folder_its_options_name(tmp_path):
    folder = tmp_path / "ada"
    outcome = run(saver_graph(), files_dir=str(folder), files_max_bytes=2**20)
    assert outcome.status == "succeeded", outcome.error
    assert outcome.outputs["saver"]["path"] == "tiny.pt"
    assert set(torch.load(folder / "tiny.pt", weights_only=True)) == {"0.weight", "0.bias"}


def test_a_run_refuses_a_path_out_of_the_folder_naming_the_node_and_param(tmp_path):
    outcome = run(saver_graph("../escaped.pt"), files_dir=str(tmp_path / "ada"), files_max_bytes=2**20)
    assert outcome.status == "failed"
    assert outcome.error.startswith("ModelSaver failed: 'path' = '../escaped.pt' leaves your files")
    assert not (tmp_path / "escaped.pt").exists()


def test_a_run_without_file_storage_says_so():
    outcome = run(saver_graph())
    assert outcome.status == "failed" and "This run has no file storage" in outcome.error
