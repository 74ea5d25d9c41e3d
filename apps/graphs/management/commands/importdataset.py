"""python manage.py importdataset FILE...: add MNIST, Fashion-MNIST or CIFAR-10 to this server
from the archives their authors publish (fetched on a machine with internet access, copied here).

Each file is known by its published checksum and unpacked into CODEFYUI_DATA_DIR in the layout
the Dataset node reads (README, section Datasets); a file that is damaged, or not one of those
archives, is refused by name and nothing is written. Exit codes: 0 imported, 1 refused.
"""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.graphs import data_import
from codefyui import conf


class Command(BaseCommand):
    help = ("Import the published archives of MNIST (its four *-ubyte.gz files), Fashion-MNIST (its four "
            "*-ubyte.gz files) or CIFAR-10 (cifar-10-python.tar.gz or cifar-10-binary.tar.gz) into "
            "CODEFYUI_DATA_DIR, each checked against its published checksum.")
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="a published archive of a dataset")

    def handle(self, *args, files: list[str], **opts) -> None:
        data_dir = conf.DATA_DIR
        try:
            imported = data_import.import_files([Path(f) for f in files], data_dir)
        except data_import.Refused as exc:
            raise CommandError("Nothing was imported.\n" + str(exc)) from None
        except OSError as exc:
            raise CommandError(f"Nothing was imported: writing into {data_dir} failed ({exc})") from None
        for path, archive in imported:
            self.stdout.write(f"{path}: {data_import.TITLES[archive.dataset]}'s {archive.name}, checksum as "
                              "published; unpacked")
        self.stdout.write(f"\nDatasets in {data_dir}:")
        for row in data_import.inventory(data_dir):
            line = f"  {row['name']}: {row['text']}"
            if row["missing"]:
                line += f" Missing in {row['folder']}: {row['missing']}."
            self.stdout.write(line)
        self.stdout.write("\nRuns started from now on read the new files, except a repeated run the server answers "
                          "from its execution cache: restart the server to empty it.")
