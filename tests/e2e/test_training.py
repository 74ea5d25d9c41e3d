"""The "Train a digit classifier" lesson in a real Chromium, with and without JavaScript: the
TrainingLoop card's progress bar, the Training tab's loss curve and epoch table, and the epoch
selector stepping through the weights each epoch left; screenshots of the Training tab at
1366x768 and 1920x1080 (CODEFYUI_SCREENS=<folder>)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_inspector import Inspecting
from tests.e2e.test_screen import Screen

pytestmark = pytest.mark.e2e

LESSON = re.compile(r"^Train a digit classifier")
TRAINING_S = 180_000  # five epochs of Digits on a busy two-core server


class Training(Inspecting):
    def open_lesson(self) -> None:
        self.page.goto("/editor/")
        self.click(self.page.get_by_role("button", name=LESSON))
        expect(self.card("TrainingLoop")).to_be_visible()

    def train(self) -> None:
        """Run the lesson; the card's bar reports while it trains; wait until the run is over."""
        self.run()
        self.until_trained()

    def until_trained(self) -> None:
        bar = self.card("TrainingLoop").get_by_role("progressbar", name="Training progress")
        expect(bar).to_be_visible(timeout=TRAINING_S)
        expect(self.run_status()).to_contain_text("Run succeeded", timeout=TRAINING_S)
        if self.js:
            self.page.wait_for_function(f"() => {self.SETTLED}")
        else:
            expect(self.page.locator('meta[http-equiv="refresh"]')).to_have_count(0, timeout=TRAINING_S)
        expect(self.card("TrainingLoop")).to_contain_text("Epoch 5/5")

    def capture_gradients(self) -> None:
        """Settings -> Training Behavior: Capture gradients on, applied."""
        settings = self.open_settings()
        training = settings.get_by_role("region", name="Training Behavior")
        training.get_by_role("checkbox", name=re.compile(r"^Capture gradients")).check()
        self.submit(training.get_by_role("button", name="Apply").click)
        expect(self.open_settings().get_by_role("checkbox", name=re.compile(r"^Capture gradients"))).to_be_checked()

    def open_training_tab(self) -> None:
        self.inspect("TrainingLoop")
        self.show_tab("Training")

    def epoch_link(self, n: int):
        return self.inspector.get_by_role("navigation", name="Recorded epochs").get_by_role("link", name=f"Epoch {n}", exact=True)


def check_training_tab(editor: Training) -> None:
    pane = editor.inspector
    expect(pane.get_by_role("region", name="Training progress")).to_contain_text("Epoch5/5")
    expect(pane.get_by_role("img", name=re.compile(r"^Loss per epoch: training \(solid\) and validation"))).to_be_visible()
    expect(pane.locator("table.epochs tbody tr")).to_have_count(5)  # FALLBACK: the epoch table by its class
    expect(editor.epoch_link(5)).to_have_attribute("aria-current", "true")
    expect(pane).to_contain_text("After epoch 5")
    editor.click(editor.epoch_link(2))
    expect(editor.epoch_link(2)).to_have_attribute("aria-current", "true")
    expect(editor.inspector).to_contain_text("After epoch 2")
    expect(editor.inspector.get_by_role("group", name="Values of layers.c1.weight after epoch 2")).to_be_visible()


def check_backward_tab(editor: Training) -> None:
    """GR1, GR2: after a TrainingLoop no extra backward pass runs; the Small CNN's Backward tab
    shows its last batch's weight gradients, and Gradients by layer every layer of it."""
    editor.inspect("Small CNN")
    editor.show_tab("Backward")
    pane = editor.inspector
    expect(pane).to_contain_text("no extra backward pass after TrainingLoop")
    weights = pane.get_by_role("region", name="Weight gradients")
    expect(weights.get_by_role("article", name="Gradient of layers.c1.weight", exact=True)).to_contain_text("‖g‖")
    layers = pane.get_by_role("group", name="Gradients by layer").get_by_role("table")
    expect(layers.get_by_role("row").filter(has_text=re.compile(r"^Small CNN\b"))).not_to_have_count(0)
    expect(layers).to_contain_text(re.compile(r"healthy|vanishing|exploding"))


def test_the_digit_lesson_trains_with_javascript(page: Page):
    editor = Training(page, js=True)
    editor.open_lesson()
    editor.capture_gradients()
    editor.train()
    editor.open_training_tab()
    check_training_tab(editor)
    check_backward_tab(editor)
    evaluate = editor.card("Test accuracy")
    expect(editor.badge("Test accuracy")).to_have_text("Completed")
    assert evaluate.count() == 1


def test_the_digit_lesson_trains_without_javascript(nojs_page: Page):
    """Also issue 49 item 2: the running page's self-refresh keeps the Training view chosen and
    puts the column at its live progress (#watching), not back at its top."""
    editor = Training(nojs_page, js=False)
    editor.open_lesson()
    editor.capture_gradients()
    editor.open_training_tab()
    editor.run()
    nojs_page.wait_for_url(re.compile(r"refresh=\d+#watching$"), timeout=TRAINING_S)
    expect(editor.inspector.get_by_role("region", name="Training progress")).to_be_in_viewport()
    editor.until_trained()
    check_training_tab(editor)
    check_backward_tab(editor)


def test_the_training_tab_on_a_class_screen(screen_page):
    """The Training tab fits a school laptop and a classroom display, with and without JavaScript."""
    page, js = screen_page
    editor = type("TrainingScreen", (Training, Screen), {})(page, js=js)
    editor.open_lesson()
    editor.capture_gradients()
    editor.train()
    editor.open_training_tab()
    editor.reachable(editor.inspector.get_by_role("img", name=re.compile(r"^Loss per epoch")))
    editor.shot("training-curve")
    editor.reachable(editor.epoch_link(3))
    editor.shot("training-epochs")
    editor.click(editor.epoch_link(3))
    editor.inspector.get_by_role("group", name="Values of layers.c1.weight after epoch 3").scroll_into_view_if_needed()
    editor.shot("training-epoch-3")
    check_backward_tab(editor)
    editor.reachable(editor.inspector.get_by_role("group", name="Gradients by layer"))
    editor.shot("training-backward")
