"""A template loader for the installed packs: each pack's package may hold a ``templates/``
folder (its Inspector panel), found through the same entry points as its nodes."""
from django.template.loaders.filesystem import Loader as FilesystemLoader

from .nodes.packs import template_dirs


class Loader(FilesystemLoader):
    def get_dirs(self):
        return template_dirs()
