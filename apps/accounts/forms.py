"""The login form: Django's own, with one more thing to say when a login fails."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from .roster import class_has_ended

CLASS_ENDED = "Your class has ended. Ask your teacher."


class LoginForm(AuthenticationForm):
    """Authentication is unchanged (the backends still refuse an inactive account, and a wrong
    password counts for login throttling as before). Only the message differs: a student whose
    class has ended, giving their right password, is told so instead of "do not match"; anyone
    else, or a wrong password, learns nothing new."""

    class_ended = False

    def get_invalid_login_error(self) -> ValidationError:
        username, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        user = get_user_model().objects.filter(username=username, is_active=False).first() if username else None
        if user is not None and password and class_has_ended(user) and user.check_password(password):
            self.class_ended = True
            return ValidationError(CLASS_ENDED, code="class_ended")
        return super().get_invalid_login_error()
