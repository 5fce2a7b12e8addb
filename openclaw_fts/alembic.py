"""Helpers for hosts that run the plugin's migrations inside their own Alembic environment.

Invariant: :func:`include_name` hides exactly the objects Alembic cannot model (what each
engine's backend names as its own: the FTS5 virtual table and its shadow tables on SQLite; the
generated tsvector column and its GIN index on PostgreSQL) and the plugin's stand-alone version
table, so autogenerate against a migrated database reports no changes on either; and the
``process_revision_directives`` hook of :func:`configure_options` never lets ``alembic
revision`` (nor ``alembic merge``) write a file on the plugin's branch or into the plugin's
installed package: a revision goes to the host's own version location and branch, or the
command stops with a message naming the command to run instead.

In a host's ``env.py`` (docs/alembic.md)::

    from openclaw_fts.alembic import configure_options

    context.configure(
        connection=connection,
        render_as_batch=True,  # SQLite
        **configure_options(my_app_metadata, branch_label="my_app"),
    )

with ``revision_environment = true`` (so that a revision without ``--autogenerate`` runs
``env.py``, and with it the hook) and both version locations in the host's configuration::

    [tool.alembic]
    revision_environment = true
    version_locations = ["%(here)s/migrations/versions", "openclaw_fts:migrations/versions"]

then ``alembic upgrade heads`` and ``alembic revision --autogenerate -m "..."``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import MetaData

from .index.probes import all_probes
from .models import metadata as plugin_metadata

if TYPE_CHECKING:
    from alembic.operations.ops import MigrateOperation, MigrationScript
    from alembic.runtime.migration import MigrationContext
    from alembic.script import Script, ScriptDirectory

# Alembic is imported inside the functions: the store and the command line import this module
# (for VERSION_TABLE) and most of their runs never touch Alembic.

#: Version table of the plugin's stand-alone migrations (``openclaw-fts upgrade``).
VERSION_TABLE = "openclaw_fts_version"
#: The Alembic branch label of the plugin's revisions.
BRANCH_LABEL = "openclaw_fts"
#: The folder of the plugin's revisions inside the package (resolved: in a source checkout it is
#: a symbolic link to the top-level ``migrations/``, and Alembic resolves the scripts' paths).
PLUGIN_VERSIONS = (Path(__file__).parent / "migrations" / "versions").resolve()
#: The Alembic option that makes ``alembic revision`` (without ``--autogenerate``) run env.py.
REVISION_ENVIRONMENT = "revision_environment"

#: Alembic's ``process_revision_directives`` signature.
RevisionDirectivesHook = Callable[["MigrationContext", Any, list["MigrationScript"]], None]


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic ``include_name`` hook: skip FTS5 tables, the PostgreSQL tsvector column and GIN
    index, and the plugin's version table."""
    if name is None:
        return True
    if type_ == "table" and name == VERSION_TABLE:
        return False
    table = parent_names.get("table_name") if isinstance(parent_names, dict) else None
    # The hook does not know the database's engine: what any engine owns is skipped.
    return not any(found.unmodelled(type_, name, table) for found in all_probes())


def configure_options(
    host_metadata: MetaData | Sequence[MetaData],
    *,
    branch_label: str,
    process_revision_directives: RevisionDirectivesHook | None = None,
) -> dict[str, Any]:
    """What a host's ``env.py`` passes to ``context.configure`` besides its connection (or URL)
    and dialect options: ``target_metadata`` (the host's metadata and the plugin's),
    ``include_name`` and a ``process_revision_directives`` hook that writes every new revision
    on the host's branch ``branch_label`` in the host's version location (the host's own hook,
    if any, runs first).

    Raises ``alembic.util.CommandError`` when the Alembic configuration does not set
    ``revision_environment = true``: without it ``alembic revision -m ...`` (no
    ``--autogenerate``) never runs env.py, so nothing could keep that file out of the plugin's
    package."""
    _require_revision_environment()
    _refuse_a_merge_with_the_plugin()
    hosts = [host_metadata] if isinstance(host_metadata, MetaData) else list(host_metadata)
    router = RevisionRouter(branch_label, then=process_revision_directives)
    return {
        "target_metadata": [*hosts, plugin_metadata],
        "include_name": include_name,
        "process_revision_directives": router,
    }


def _require_revision_environment() -> None:
    from alembic import context
    from alembic.util import CommandError

    try:
        config = context.config
    except (AttributeError, NameError):  # not inside an Alembic command (a test's own context)
        return
    getter = getattr(config, "get_alembic_option", config.get_main_option)
    value = str(getter(REVISION_ENVIRONMENT, "false") or "false").strip().lower()
    if value not in ("true", "1", "yes", "on"):
        raise CommandError(
            "openclaw_fts: set revision_environment = true in the [alembic] section of "
            "alembic.ini (or [tool.alembic] in pyproject.toml): without it `alembic revision` "
            "skips env.py, and a revision could be written into the installed openclaw_fts "
            "package (docs/alembic.md)"
        )


def _refuse_a_merge_with_the_plugin() -> None:
    """``alembic merge`` has no ``process_revision_directives``: a merge naming a plugin
    revision (``alembic merge heads``) would be written in the folder of its first head — the
    plugin's, inside the installed package — and would tie the host's history to the plugin's.
    The two branches stay two heads (``alembic upgrade heads``); ordering is ``depends_on``."""
    from alembic import context
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        config = context.config
    except AttributeError:  # not inside an Alembic command
        return
    options = config.cmd_opts
    command = getattr(options, "cmd", None)
    if not command or getattr(command[0], "__name__", "") != "merge":
        return
    named = ScriptDirectory.from_config(config).get_revisions(getattr(options, "revisions", ()))
    if any(r is not None and _is_plugin(r) for r in named):
        raise CommandError(
            "openclaw_fts: do not merge the plugin's branch into yours: the merge revision "
            "would be written into the installed openclaw_fts package. Keep the two heads "
            "(alembic upgrade heads) and order your revisions with depends_on "
            "(docs/alembic.md); to merge branches of your own, name them: "
            "alembic merge host_app@head OTHER@head"
        )


class RevisionRouter:
    """Alembic ``process_revision_directives`` hook keeping new revisions on the host's branch.

    * ``alembic revision`` with no ``--head`` (Alembic's ``head``): the revision extends the
      host's branch, or — the host's first revision — starts it (``--head base``, the branch
      label, the host's version location); with several host heads Alembic's own *Multiple
      heads* error stands.
    * ``--head`` or ``--version-path`` naming the plugin's branch or folder: the command stops,
      naming the command to run.
    * A revision creating a foreign key to a plugin table ``depends_on`` the plugin's head (so
      Alembic creates the plugin's tables first), unless the command named its own.
    """

    def __init__(self, branch_label: str, *, then: RevisionDirectivesHook | None = None) -> None:
        self.branch_label = branch_label
        self.then = then

    def __call__(
        self, context: MigrationContext, revision: Any, directives: list[MigrationScript]
    ) -> None:
        if self.then is not None:
            self.then(context, revision, directives)
        scripts = context.script
        if scripts is None:
            return
        command = getattr(context.opts.get("revision_context"), "command_args", {})
        autogenerate = bool(command.get("autogenerate", True))
        for directive in directives:
            self._route(scripts, directive, autogenerate)

    def _route(
        self, scripts: ScriptDirectory, directive: MigrationScript, autogenerate: bool
    ) -> None:
        from alembic.util import CommandError

        locations = _version_locations(scripts)
        host_locations = [loc for loc in locations if loc.resolve() != PLUGIN_VERSIONS]
        if len(host_locations) == len(locations):
            return  # the plugin's revisions are not in this history: nothing to protect
        heads = scripts.get_revisions("heads")
        plugin_heads = [h.revision for h in heads if h is not None and _is_plugin(h)]
        host_heads = [h for h in heads if h is not None and not _is_plugin(h)]
        command = "alembic revision --autogenerate" if autogenerate else "alembic revision"
        message = directive.message or "..."
        path = directive.version_path
        if path is not None and Path(path).resolve() == PLUGIN_VERSIONS:
            raise CommandError(_stop(command, host_heads, message, "--version-path"))
        head = directive.head or "head"
        if head == "head":
            if len(host_heads) == 1:
                directive.head = host_heads[0].revision
            elif not host_heads:
                self._start_branch(directive, host_locations, f'{command} -m "{message}"')
            # several host heads: Alembic's "Multiple heads" error names the way out
        elif head != "base":
            try:
                named = scripts.get_revisions(head)
            except Exception:  # Alembic reports a head it cannot resolve itself
                named = ()
            if any(r is not None and _is_plugin(r) for r in named):
                raise CommandError(_stop(command, host_heads, message, f"--head {head}"))
        elif directive.version_path is None and len(host_locations) == 1:
            directive.version_path = str(host_locations[0])
        if not directive.depends_on and plugin_heads and _references(directive, plugin_metadata):
            directive.depends_on = plugin_heads[0] if len(plugin_heads) == 1 else plugin_heads

    def _start_branch(
        self, directive: MigrationScript, host_locations: list[Path], command: str
    ) -> None:
        from alembic.util import CommandError

        if directive.version_path is None:
            if not host_locations:
                raise CommandError(
                    "openclaw_fts: no version location of the host's own: add "
                    '"%(here)s/migrations/versions" to version_locations beside '
                    '"openclaw_fts:migrations/versions" (docs/alembic.md)'
                )
            if len(host_locations) > 1:
                choices = " or ".join(str(p) for p in host_locations)
                raise CommandError(
                    "openclaw_fts: the host's first revision needs its folder: run "
                    f"{command} --version-path {choices}"
                )
            directive.version_path = str(host_locations[0])
        directive.head = "base"
        if not directive.branch_label:
            directive.branch_label = self.branch_label


def _stop(command: str, host_heads: Sequence[Script], message: str, option: str) -> str:
    """The message of a command that would write on the plugin's branch, naming the command
    that writes on the host's instead (without ``--head`` while the host has one head or none,
    which this hook routes; with it when the host has several)."""
    if len(host_heads) > 1:
        labels = sorted(host_heads[0].branch_labels)
        command += f" --head {labels[0]}@head" if labels else f" --head {host_heads[0].revision}"
    return (
        f"openclaw_fts: {option} would write this revision on the plugin's branch, into the "
        f"installed openclaw_fts package ({PLUGIN_VERSIONS}), where the next upgrade of the "
        f'package loses it. Run instead: {command} -m "{message}"'
    )


def _is_plugin(script: Script) -> bool:
    return Path(script.path).resolve().parent == PLUGIN_VERSIONS


def _version_locations(scripts: ScriptDirectory) -> list[Path]:
    """The history's version folders, as Alembic resolves them (package forms included)."""
    from alembic.util import coerce_resource_to_filename

    given = scripts.version_locations
    if not given:
        return [Path(scripts.dir, "versions").absolute()]
    return [Path(str(coerce_resource_to_filename(location))).absolute() for location in given]


def _references(directive: MigrationScript, metadata: MetaData) -> bool:
    """Whether the revision's upgrade creates a foreign key to a table of ``metadata``."""
    tables = set(metadata.tables)
    return any(
        target.split(".")[-2] in tables
        for ops in directive.upgrade_ops_list
        for target in _foreign_key_targets(ops.ops)
        if "." in target
    )


def _foreign_key_targets(operations: Iterable[MigrateOperation]) -> Iterable[str]:
    """``table.column`` of every foreign key the operations create (batch operations too)."""
    from alembic.operations import ops

    for op in operations:
        if isinstance(op, ops.ModifyTableOps):
            yield from _foreign_key_targets(op.ops)
        elif isinstance(op, ops.CreateTableOp):
            yield from (fk.target_fullname for fk in op.to_table().foreign_keys)
        elif isinstance(op, ops.AddColumnOp):
            yield from (fk.target_fullname for fk in op.column.foreign_keys)
        elif isinstance(op, ops.CreateForeignKeyOp):
            yield f"{op.referent_table}.{op.remote_cols[0]}" if op.remote_cols else ""
