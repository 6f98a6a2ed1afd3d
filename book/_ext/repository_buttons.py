"""Repository and launch buttons follow the one repository setting in ``_config.yml``.

``repository: url`` (with ``branch``) is the course's public git repository;
it is empty until an instructor publishes the course.  Jupyter Book refuses
``html.use_repository_button`` without a URL, and sphinx-book-theme fails on a
launch button without one, so ``_config.yml`` switches neither on: this
extension does, at ``config-inited``, exactly when the URL is set.

- URL empty: no repository, edit, issues or launch (Binder, JupyterHub,
  Colab, Thebe) button on any page: nothing points at a repository that does
  not exist.
- URL set: the repository button, and the launch buttons whose service URL
  ``_config.yml``'s ``launch_buttons`` names (Binder opens a chapter's MyST
  text, which jupytext turns into a notebook there).  Colab cannot open MyST
  ``.md`` files, so the Colab launch button stays off on every page; the
  Exercises page links each exercise notebook in Colab instead.
"""
from __future__ import annotations

LAUNCH_SERVICES = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "jupyterlite_url")
REPOSITORY_BUTTONS = ("use_repository_button", "use_edit_page_button", "use_issues_button", "use_source_button")


def apply(theme_options: dict) -> dict:
    """``theme_options`` with the buttons the repository setting allows (changed in place and returned)."""
    url = str(theme_options.get("repository_url") or "").strip()
    launch = dict(theme_options.get("launch_buttons") or {})
    if url:
        theme_options["repository_url"] = url
        theme_options["use_repository_button"] = True
        launch["colab_url"] = ""  # every page is MyST text, which Colab cannot open
    else:
        theme_options.pop("repository_url", None)
        for key in REPOSITORY_BUTTONS:
            theme_options[key] = False
        launch.update({key: "" for key in LAUNCH_SERVICES}, thebe=False)
    theme_options["launch_buttons"] = launch
    return theme_options


def _configure(app, config) -> None:
    config.html_theme_options = apply(dict(config.html_theme_options or {}))


def setup(app):
    app.connect("config-inited", _configure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
