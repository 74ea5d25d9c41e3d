"""The class pages, under /classes/."""
from django.urls import path

from .views import board
from .views import cards, ending, roster
from .views import handout

app_name = "classes"

urlpatterns: list = [
    path("", board.index, name="index"),
    path("<int:class_id>/", board.class_view, name="class"),
    path("<int:class_id>/table", board.table, name="table"),
    path("<int:class_id>/roster", roster.roster_page, name="roster"),
    path("<int:class_id>/roster/add", roster.add_students, name="roster-add"),
    path("<int:class_id>/students/<int:student_id>/reset", roster.reset_password, name="reset-password"),
    path("<int:class_id>/cards", cards.cards, name="cards"),
    path("<int:class_id>/end", ending.end_class, name="end"),
    path("<int:class_id>/reopen", ending.reopen_class, name="reopen"),
    path("<int:class_id>/export.zip", ending.export_zip, name="export"),
    path("<int:class_id>/handout", handout.handout_page, name="handout"),
    path("<int:class_id>/handout/<int:handout_id>/again", handout.handout_again, name="handout-again"),
    # a student's own copy of a handout, from the editor's File menu (apps.editor.tab_actions)
    path("handouts/tab/<int:tab_id>/reset", handout.handout_reset, name="handout-reset"),
]
