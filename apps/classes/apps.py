from django.apps import AppConfig


class ClassesConfig(AppConfig):
    """A teacher's pages: rosters, login cards, handing out a lesson, the class view and a
    read-only look at a student's work. The top of the house: it may import every app."""

    name = "apps.classes"
