"""Pictures on cards and in the Inspector, and a captured tensor downloaded as .npy or CSV:
shown from an owner-checked URL (never inlined), counted in the capture store's budget, and
carried across the run worker's wire intact."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest
import torch
from PIL import Image

from apps.editor.models import Tab
from apps.graphs import document
from apps.graphs.nodes.library._images import PngImage
from apps.runs import service
from apps.runs.engine.storage import count_storages
from apps.runs.models import Run
from apps.runs.store import MemoryCaptureStore, RecordingStopped

pytestmark = pytest.mark.django_db(transaction=True)


def with_visualize(walkthrough: dict) -> dict:
    """The walkthrough with a Visualize drawing Reshape's [1, 16] row as a line."""
    walkthrough["nodes"].append({"id": "vis", "type": "Visualize", "position": {"x": 744, "y": 360},
                                 "data": {"params": {"title": "Sixteen numbers", "plot_type": "line"}}})
    walkthrough["edges"].append({"id": "e-reshape-vis", "source": "reshape", "sourceHandle": "tensor",
                                 "target": "vis", "targetHandle": "data"})
    return walkthrough


@pytest.fixture
def tab(student, walkthrough):
    return Tab.objects.create(owner=student, title="walk", document=document.normalise(with_visualize(walkthrough)))


@pytest.fixture
def finished(student_client, tab, student):
    student_client.post(f"/editor/{tab.pk}/run", {"device": "follow"})
    run = service.wait_for(Run.objects.get(owner=student).pk)
    assert run.status == Run.Status.SUCCEEDED, run.log
    return run


def page(client, tab, query):
    return client.get(f"/editor/{tab.pk}/?{query}").content.decode()


def png_url(run, node="vis", port="image"):
    return f"/editor/runs/{run.pk}/outputs/{node}/{port}/picture.png"


def test_the_card_shows_the_picture_as_an_img_from_its_url(student_client, tab, finished):
    body = page(student_client, tab, f"run={finished.pk}")
    img = re.search(r'<img class="card-picture card-image" src="([^"]+)" width="(\d+)" height="(\d+)" alt="([^"]+)"', body)
    assert img, "the Visualize card shows its picture"
    assert img[1] == png_url(finished) and img[4].startswith("Sixteen numbers: 16 values from -2 to 3")
    assert int(img[2]) <= 168 and int(img[3]) <= 90
    assert "data:image" not in body and "base64" not in body     # never inlined


def test_the_inspector_shows_the_picture_with_a_download_link(student_client, tab, finished):
    body = page(student_client, tab, f"node=vis&run={finished.pk}&view=forward")
    assert f'<img src="{png_url(finished)}" width="640" height="420" alt="Sixteen numbers: 16 values' in body
    assert f'<a href="{png_url(finished)}?download=1" download>Download PNG</a>' in body
    assert "picture · 640 × 420 px · PNG" in body


def test_the_picture_url_gives_the_png(student_client, finished):
    shown = student_client.get(png_url(finished))
    assert shown.status_code == 200 and shown["Content-Type"] == "image/png"
    assert "attachment" not in shown.get("Content-Disposition", "")
    picture = Image.open(io.BytesIO(shown.content))
    assert picture.size == (640, 420)
    saved = student_client.get(png_url(finished) + "?download=1")
    assert saved["Content-Disposition"] == 'attachment; filename="sixteen-numbers-16-values-from-2-to-3.png"'
    assert saved.content == shown.content


def test_not_a_picture_or_not_kept_answers_404_with_words(student_client, finished):
    answer = student_client.get(png_url(finished, "reshape", "tensor"))
    assert answer.status_code == 404 and "not a picture" in answer.content.decode()
    answer = student_client.get(png_url(finished, "nobody", "image"))
    assert answer.status_code == 404 and "no longer kept" in answer.content.decode()


def test_the_forward_tab_links_the_tensor_downloads(student_client, tab, finished):
    body = page(student_client, tab, f"node=input&run={finished.pk}&view=forward")
    base = f"/editor/runs/{finished.pk}/outputs/input/tensor"
    assert f'<a href="{base}/tensor.npy" download aria-label="Download tensor as NumPy .npy">.npy</a>' in body
    assert (f'<a href="{base}/tensor.csv?s=0" download aria-label="Download the slice shown of tensor as CSV">'
            "CSV (slice [0, :, :])</a>") in body


def test_npy_round_trips_through_numpy_load(student_client, finished):
    answer = student_client.get(f"/editor/runs/{finished.pk}/outputs/input/tensor/tensor.npy")
    assert answer.status_code == 200 and answer.streaming
    data = b"".join(answer.streaming_content)
    assert int(answer["Content-Length"]) == len(data)
    assert answer["Content-Disposition"] == 'attachment; filename="input-tensor.npy"'
    loaded = np.load(io.BytesIO(data), allow_pickle=False)
    assert loaded.shape == (1, 4, 4) and loaded.dtype == np.float32
    assert loaded[0, 0].tolist() == [0.5, -1.0, 2.0, 0.0] and loaded[0, 3].tolist() == [0.0, 2.5, -1.5, 1.25]


def test_csv_of_a_2d_tensor_and_of_a_slice(student_client, finished):
    row = student_client.get(f"/editor/runs/{finished.pk}/outputs/reshape/tensor/tensor.csv")
    assert row["Content-Disposition"] == 'attachment; filename="reshape-tensor.csv"'
    text = b"".join(row.streaming_content).decode()
    assert text == "0.5,-1,2,0,1.5,0.25,-0.5,3,-2,1,0.75,-0.25,0,2.5,-1.5,1.25\n"
    sliced = student_client.get(f"/editor/runs/{finished.pk}/outputs/input/tensor/tensor.csv", {"s": "0"})
    assert sliced["Content-Disposition"] == 'attachment; filename="input-tensor-slice-0.csv"'
    lines = b"".join(sliced.streaming_content).decode().splitlines()
    assert lines == ["0.5,-1,2,0", "1.5,0.25,-0.5,3", "-2,1,0.75,-0.25", "0,2.5,-1.5,1.25"]


def test_big_captures_are_streamed_in_pieces_and_csv_is_capped(student_client, student, fresh_store, monkeypatch):
    from apps.editor.views import downloads
    run = Run.objects.create(owner=student, graph_name="big", status=Run.Status.SUCCEEDED)
    fresh_store.open_run(str(run.pk))
    fresh_store.put(str(run.pk), "n", "tensor", torch.arange(30.0).reshape(10, 3))
    fresh_store.put(str(run.pk), "n", "ids", torch.tensor([[True, False]]))
    fresh_store.close_run(str(run.pk))
    monkeypatch.setattr(downloads, "CHUNK_ELEMENTS", 6)
    answer = student_client.get(f"/editor/runs/{run.pk}/outputs/n/tensor/tensor.npy")
    pieces = list(answer.streaming_content)
    assert len(pieces) == 1 + 5            # the header, then two rows at a time
    assert np.load(io.BytesIO(b"".join(pieces))).tolist() == torch.arange(30.0).reshape(10, 3).tolist()
    csv = b"".join(student_client.get(f"/editor/runs/{run.pk}/outputs/n/tensor/tensor.csv").streaming_content)
    assert csv.decode().splitlines()[9] == "27,28,29"
    assert b"".join(student_client.get(f"/editor/runs/{run.pk}/outputs/n/ids/tensor.csv").streaming_content) == b"1,0\n"
    monkeypatch.setattr(downloads, "CSV_MAX_CELLS", 29)
    refused = student_client.get(f"/editor/runs/{run.pk}/outputs/n/tensor/tensor.csv")
    assert refused.status_code == 413 and "download it as .npy" in refused.content.decode()


def test_another_student_gets_404_for_every_download(student_client, finished, stranger, client):
    client.force_login(stranger)
    for url in (png_url(finished), png_url(finished) + "?download=1",
                f"/editor/runs/{finished.pk}/outputs/input/tensor/tensor.npy",
                f"/editor/runs/{finished.pk}/outputs/input/tensor/tensor.csv"):
        answer = client.get(url)
        assert answer.status_code == 404, url
        assert b"PNG" not in answer.content and b"NUMPY" not in answer.content


# -- the store and the wire ----------------------------------------------------------------

def test_a_pictures_bytes_count_in_the_capture_budget():
    picture = PngImage(b"x" * 5000, 10, 10, "t")
    storages = {}
    count_storages({"a": picture, "b": [picture]}, storages)
    assert sum(storages.values()) == 5000                # counted once however often it is reached
    store = MemoryCaptureStore(max_runs=5, max_bytes=8000)
    store.open_run("r")
    store.put("r", "n", "image", picture)
    assert store.usage()["bytes"] == 5000
    with pytest.raises(RecordingStopped):
        store.put("r", "m", "image", PngImage(b"y" * 5000, 10, 10))


def test_a_picture_crosses_the_wire_intact():
    import socket

    from apps.runs import wire
    picture = PngImage(b"\x89PNG" + bytes(range(256)) * 40, 640, 420, "title")
    left, right = socket.socketpair()
    sender, receiver = wire.Wire(left), wire.Wire(right)
    try:
        sender.send({"capture": picture, "tensor": torch.arange(4.0)})
        got = receiver.recv()
    finally:
        sender.close()
        receiver.close()
    assert got["capture"] == picture and isinstance(got["capture"], PngImage)
    assert got["tensor"].tolist() == [0.0, 1.0, 2.0, 3.0]
