"""The theme: Jinja templates and static assets, built-in ones overridden file by file by the project's.

Templates: a ``ChoiceLoader`` over the project's ``templates/`` and the built-in folder, so a
project file replaces the built-in file of the same name; ``builtin/<name>`` always reaches the
built-in one (``{% extends "builtin/run.html" %}``). Autoescape is on for every template. When the
project has templates of its own (a pull request may change one), the environment is sandboxed:
a project template cannot reach Python internals (``__class__``, ``__globals__``), so it cannot run
OS commands during a build. A project without any renders only evalsite's own templates, code
shipped with evalsite as its Python is, in a plain environment with no loader over the project
(:func:`environment`): the sandbox's checks of every attribute and call would protect nothing.
A template that fails while it renders (``{{ 1/0 }}``, a method of an undefined attribute, an
include that is missing) stops the build with one line naming the template file and line
(:class:`ThemeEnvironment`), never a traceback. Compiled templates are kept between builds
(:func:`compiled_templates`).

Static assets: the built-in ``static/`` overlaid with the project's, each written as
``static/<stem>.<hash>.<ext>`` (the hash of its content) so a redeploy never serves a stale file;
``url(...)`` references between static files inside CSS are rewritten to the hashed names.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NoReturn, TypedDict

import jinja2
from jinja2 import (
    BytecodeCache,
    ChoiceLoader,
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    PrefixLoader,
    StrictUndefined,
    TemplateNotFound,
    TemplateSyntaxError,
    select_autoescape,
)
from jinja2.bccache import Bucket
from jinja2.sandbox import SandboxedEnvironment

from evalsite import __version__
from evalsite.errors import EvalsiteError, SiteError
from evalsite.project import shipped_folder
from evalsite.runlog.hashing import sha256_text
from evalsite.site import formatting

CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")


def builtin_theme_dir(kind: str) -> Path:
    """``templates`` or ``static``: inside the wheel when installed, beside the package in a checkout."""
    return shipped_folder(f"theme/{kind}", kind)


class ProjectLoader(FileSystemLoader):
    """The project's ``templates/``, minus any file whose real path leaves the project (a symlink to
    ``/proc/self/environ``): such a name falls through to the built-in template, as if absent."""

    def __init__(self, folder: Path, root: Path) -> None:
        super().__init__(str(folder))
        self.root = root

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        if not inside(self.root, Path(filename)):
            raise TemplateNotFound(template)
        return source, filename, uptodate


class ThemeEnvironment(Environment):
    """Every error raised while a template renders turned into a one-line :class:`SiteError`
    naming the template file (relative to ``root``) and line. Syntax errors keep Jinja's own
    exception (they carry their file and line; the build reports them)."""

    root: Path = Path(".")

    def handle_exception(self, source: str | None = None) -> NoReturn:
        try:
            super().handle_exception(source)  # re-raises, its traceback rewritten to template lines
        except (TemplateSyntaxError, EvalsiteError):
            raise
        except Exception as exc:
            message = f"no template {exc.name!r}" if isinstance(exc, TemplateNotFound) else (
                " ".join(str(exc).split())[:300] or type(exc).__name__)
            raise SiteError(f"template error: {self._where(exc.__traceback__)}{message}") from None

    def _where(self, tb: TracebackType | None) -> str:
        """``file, line N: `` of the innermost template frame (Jinja marks those frames)."""
        where = ""
        while tb is not None:
            if "__jinja_exception__" in tb.tb_frame.f_globals:
                where = f"{_shown_path(tb.tb_frame.f_code.co_filename, self.root)}, line {tb.tb_lineno}: "
            tb = tb.tb_next
        return where


class SandboxedThemeEnvironment(ThemeEnvironment, SandboxedEnvironment):
    """:class:`ThemeEnvironment` in Jinja's sandbox: the environment of a project with templates."""


def _shown_path(filename: str, root: Path) -> str:
    path = Path(filename)
    for base, prefix in ((root, ""), (builtin_theme_dir("templates"), "builtin/")):
        if path.is_relative_to(base):
            return prefix + path.relative_to(base).as_posix()
    return filename


class _Options(TypedDict):
    keep_trailing_newline: bool
    trim_blocks: bool
    lstrip_blocks: bool


#: the options a template's compiled code depends on, besides autoescape (on for every template)
_OPTIONS: _Options = {"keep_trailing_newline": True, "trim_blocks": True, "lstrip_blocks": True}


def compiled_templates(kind: type[ThemeEnvironment]) -> BytecodeCache | None:
    """Templates compiled by an earlier build for an environment of class ``kind`` (Jinja's bytecode
    cache; compiling the theme costs ~0.2 s of CPU a build), or None where there is no safe folder
    for them. The folder is Jinja's own per-user one in the system's temp folder, made private and
    its owner checked, never the project's (a pull request could plant compiled code there). Jinja
    keys an entry by the template's path and checks its source; the name here adds what else the
    code depends on: evalsite's and Jinja's versions, the environment's options and whether it is
    sandboxed (sandboxed code calls through the sandbox's checks; the plain environment's would not)."""
    key = sha256_text(repr((__version__, jinja2.__version__, kind.__name__, kind.sandboxed, sorted(_OPTIONS.items()))))
    try:
        return _KeptTemplates(pattern=f"evalsite-{key[:16]}-%s.cache")
    except (OSError, RuntimeError):  # no private temp folder of this user's to be had
        return None


class _KeptTemplates(FileSystemBytecodeCache):
    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:  # a full disk costs the next build a compile, not this build
            pass


def environment(project_templates: Path, root: Path | None = None) -> ThemeEnvironment:
    """Project templates override built-ins file by file; ``builtin/`` always reaches the default.
    Sandboxed whenever ``project_templates`` holds anything (:func:`has_project_templates`); else
    a plain environment over the built-in templates alone (the same options, filters and output)."""
    builtin = FileSystemLoader(str(builtin_theme_dir("templates")))
    root = project_templates.parent if root is None else root
    own = has_project_templates(project_templates)
    kind = SandboxedThemeEnvironment if own else ThemeEnvironment
    loaders = [ProjectLoader(project_templates, root)] if own else []
    env = kind(
        loader=ChoiceLoader([*loaders, builtin, PrefixLoader({"builtin": builtin})]),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        bytecode_cache=compiled_templates(kind),
        auto_reload=False,  # one environment a build: a template is loaded once, not its file's time checked at every page
        **_OPTIONS,
    )
    env.filters.update(formatting.FILTERS)
    env.root = root.resolve()
    return env


def has_project_templates(folder: Path) -> bool:
    """Whether the project's ``templates/`` folder holds anything at all (a file, hidden or not, a
    symlink, an empty folder), or cannot be listed: then its templates may be reached and every
    template renders sandboxed."""
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return True


@dataclass(frozen=True)
class Theme:
    env: Environment
    assets: dict[str, str]
    files: dict[str, bytes]
    content_hash: str
    warnings: tuple[str, ...] = ()

    def asset(self, name: str) -> str:
        """The hashed path (relative to the site root) of static file ``name``."""
        try:
            return self.assets[name]
        except KeyError:
            raise KeyError(f"no static file {name!r} in the theme") from None


def load_theme(project_templates: Path, project_static: Path, root: Path | None = None) -> Theme:
    """The theme of a project whose root is ``root`` (default: the folder holding ``templates/``);
    project files whose real path leaves the root are left out (named in ``Theme.warnings``)."""
    root = (project_templates.parent if root is None else root).resolve()
    env = environment(project_templates, root)
    outside: list[str] = []
    sources = {**_files(builtin_theme_dir("static")), **_project_files(project_static, root, outside)}
    assets, files = _hash_assets(sources)
    builtin_templates = _files(builtin_theme_dir("templates"))
    template_files = {**builtin_templates, **_project_files(project_templates, root, outside)}
    template_files.update({f"builtin/{k}": v for k, v in builtin_templates.items()})
    content_hash = sha256_text(repr(sorted((k, _sha256(v)) for k, v in {**template_files, **files}.items())))
    warnings = tuple(f"{name}: a symlink to outside the project; left out of the site" for name in outside)
    theme = Theme(env, assets, files, content_hash[:16], warnings)
    env.globals["asset"] = theme.asset
    return theme


def inside(root: Path, path: Path) -> bool:
    """``path``, symlinks resolved, lies under ``root`` (a resolved folder)."""
    resolved = path.resolve()
    return resolved == root or root in resolved.parents


def _paths(folder: Path) -> dict[str, Path]:
    """Relative posix path → file, hidden files and folders left out."""
    if not folder.is_dir():
        return {}
    return {path.relative_to(folder).as_posix(): path for path in sorted(folder.rglob("*"))
            if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)}


def _files(folder: Path) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in _paths(folder).items()}


def _project_files(folder: Path, root: Path, outside: list[str]) -> dict[str, bytes]:
    """The project's overrides; a file whose real path leaves ``root`` is named in ``outside``, never read."""
    found: dict[str, bytes] = {}
    for name, path in _paths(folder).items():
        if inside(root, path):
            found[name] = path.read_bytes()
        else:
            outside.append(f"{folder.name}/{name}")
    return found


def _hash_assets(sources: dict[str, bytes]) -> tuple[dict[str, str], dict[str, bytes]]:
    """Non-CSS files first, so CSS can point at their hashed names."""
    assets: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for name in sorted(sources, key=lambda n: (n.endswith(".css"), n)):
        content = sources[name]
        if name.endswith(".css"):
            content = _rewrite_css_urls(name, content.decode("utf-8"), assets).encode("utf-8")
        hashed = "static/" + _hashed_name(name, content)
        assets[name], files[hashed] = hashed, content
    return assets, files


def _hashed_name(name: str, content: bytes) -> str:
    digest = _sha256(content)[:10]
    folder, _, filename = name.rpartition("/")
    stem, dot, ext = filename.rpartition(".")
    hashed = f"{stem}.{digest}.{ext}" if dot and stem else f"{filename}.{digest}"
    return f"{folder}/{hashed}" if folder else hashed


def _rewrite_css_urls(name: str, css: str, assets: dict[str, str]) -> str:
    folder = posixpath.join("static", name.rpartition("/")[0])

    def replace(match: re.Match[str]) -> str:
        key = posixpath.relpath(posixpath.normpath(posixpath.join(folder, match.group(2).strip())), "static")
        if key not in assets:
            return match.group(0)
        return f'url("{posixpath.relpath(assets[key], folder)}")'

    return CSS_URL.sub(replace, css)


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()
