"""Tab now belongs to apps.editor (its table, graphs_tab, is kept as it is)."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("graphs", "0003_tab_active_segment"),
        ("editor", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Tab")]),
    ]
