from django.apps import AppConfig


class ClassesConfig(AppConfig):
    """A teacher's pages: rosters, login cards, handing out a lesson, the class view and a
    read-only look at a student's work. The top of the house: it may import every app."""

    name = "apps.classes"

    def ready(self) -> None:
        from apps.runs import service
        from codefyui.access import looked_at

        from . import live, models

        looked_at.connect(lambda sender, viewer, owner_id, what, ref, path="", **kw:
                          models.Look.record(viewer, owner_id, what, ref, path), weak=False,
                          dispatch_uid="classes.look")
        service.add_listener(live.run_changed)
        self.ready_handouts()

    def ready_handouts(self) -> None:
        """A student enrolled later gets the class's recent handouts; a copy's File menu offers Reset."""
        from django.db.models.signals import post_save

        from apps.accounts.models import Enrolment
        from apps.editor import tab_actions

        from . import handouts

        post_save.connect(handouts.on_enrolment, sender=Enrolment, dispatch_uid="classes.handouts")
        tab_actions.provide(handouts.reset_action)
