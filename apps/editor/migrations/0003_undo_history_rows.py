"""Undo / Redo steps move from two JSON lists on the tab (whole documents, rewritten by every
edit) to one compressed row per step."""
import json
import zlib

import django.db.models.deletion
from django.db import migrations, models


def move_stacks(apps, schema_editor):
    Tab, HistoryStep = apps.get_model("editor", "Tab"), apps.get_model("editor", "HistoryStep")
    for tab in Tab.objects.iterator(chunk_size=20):
        for kind, stack in (("undo", tab.undo_stack), ("redo", tab.redo_stack)):
            for snapshot in stack:  # oldest first, as the rows are read
                data = zlib.compress(json.dumps(snapshot).encode(), 1)
                HistoryStep.objects.create(tab=tab, kind=kind, snapshot=data, size=len(data))


class Migration(migrations.Migration):

    dependencies = [
        ("editor", "0002_tab_revision"),
    ]

    operations = [
        migrations.CreateModel(
            name="HistoryStep",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("undo", "Undo"), ("redo", "Redo")], max_length=4)),
                ("snapshot", models.BinaryField()),
                ("size", models.PositiveIntegerField()),
                ("tab", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="history",
                                          to="editor.tab")),
            ],
            options={
                "indexes": [models.Index(fields=["tab", "kind"], name="editor_hist_tab_id_4a89bc_idx")],
            },
        ),
        migrations.RunPython(move_stacks, migrations.RunPython.noop),
        migrations.RemoveField(model_name="tab", name="redo_stack"),
        migrations.RemoveField(model_name="tab", name="undo_stack"),
    ]
