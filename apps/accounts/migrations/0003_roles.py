"""The two roles as Django groups: Teachers (their classes, rosters and a look at their
students' work) and Students."""
from django.db import migrations

TEACHER_PERMISSIONS = {
    "view_classroom": "Can view classroom",
    "change_classroom": "Can change classroom",
    "look_at_work": "Can look at the work of their classes' students",
}


def make_groups(apps, schema_editor):
    # Permissions are otherwise made after the last migration (post_migrate): make these now.
    ContentType = apps.get_model("contenttypes", "ContentType")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    classroom, _ = ContentType.objects.get_or_create(app_label="accounts", model="classroom")
    teachers, _ = Group.objects.get_or_create(name="Teachers")
    teachers.permissions.set([
        Permission.objects.get_or_create(content_type=classroom, codename=codename, defaults={"name": name})[0]
        for codename, name in TEACHER_PERMISSIONS.items()])
    Group.objects.get_or_create(name="Students")


def drop_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["Teachers", "Students"]).delete()


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_classrooms"), ("auth", "0012_alter_user_first_name_max_length"),
                    ("contenttypes", "0002_remove_content_type_name")]
    operations = [migrations.RunPython(make_groups, drop_groups)]
