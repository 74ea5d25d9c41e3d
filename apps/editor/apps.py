from django.apps import AppConfig


class EditorConfig(AppConfig):
    name = "apps.editor"
    label = "editor"
