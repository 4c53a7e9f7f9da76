"""Where a plan's reads and listings come from.

A store answers ``read(uri)`` (bytes, or ``None`` when the object does not
exist; any other failure raises and ends the run), ``list(prefix)`` (an
iterator of pages, each a list of ``(uri, size, mtime_ms, etag)``) and
``pointer()`` (the metadata location now, or ``None``); to apply a plan,
``head(uri)`` (``(size, mtime_ms, etag)`` or ``None``) and ``delete(uri)``
(whether the object was there). Keys are never
decoded or normalised: a file named ``category=100%25`` is that name.
"""

import os
import stat
import zlib

#: Objects per listing page.
PAGE = 1000


def _pages(objects):
    """``objects`` in pages of :data:`PAGE` (none for an empty listing)."""
    page = []
    for o in objects:
        page.append(o)
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _split_walk(split, entries):
    """The objects of ``split`` (a dict: ``prefix``, ``after``, ``through``)
    in ascending key order, from ``entries(folder_uri)`` (one level under a
    folder URI ending in ``/``: ``(folder URIs ending in /, [(uri,
    version_of)])``, where ``version_of()`` gives ``(size, mtime_ms,
    etag)``, or ``None`` for an object gone meanwhile). Folders wholly
    before or after the split are not entered, and a version is asked for
    only within it. Checking the order and the range is the planner's."""
    after, through = split["after"], split["through"]

    def enter(folder):
        # Every key under `folder` starts with it: skip it when all of
        # them lie before `after` or past `through`.
        if through is not None and through < folder:
            return False
        return not (after is not None and after > folder and not after.startswith(folder))

    def walk(folder):
        folders, objects = entries(folder)
        # A folder's keys sort where its name followed by `/` does.
        for uri, version_of in sorted([(f, None) for f in folders] + list(objects), key=lambda i: i[0]):
            if through is not None and uri > through:
                return
            if version_of is None:
                if enter(uri):
                    yield from walk(uri)
            elif after is None or uri > after:
                v = version_of()
                if v is not None:
                    yield (uri, *v)

    yield from walk(split["prefix"])


class LocalStore:
    """A table on the local file system: ``file://`` plus the path, as is.
    ``roots`` serves a URI prefix from another folder (a staged or mounted
    copy of a table whose metadata names its original root)."""

    def __init__(self, roots=(), pointer=None):
        self.roots = [(u.rstrip("/"), d.rstrip("/")) for u, d in roots]
        self._pointer = pointer or (lambda: None)

    def path_of(self, uri):
        for prefix, folder in self.roots:
            if uri == prefix:
                return folder
            if uri.startswith(prefix + "/"):
                return folder + uri[len(prefix):]
        if uri.startswith("file://"):
            return uri[len("file://"):]
        raise ValueError(f"{uri}: not a local file (this store holds file:// URIs)")

    def read(self, uri):
        try:
            with open(self.path_of(uri), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def list(self, prefix):
        return _pages(self._walk(prefix))

    def _walk(self, prefix):
        base = prefix.rstrip("/")
        root = self.path_of(base)
        stack = [""]
        while stack:
            rel = stack.pop()
            try:
                entries = list(os.scandir(os.path.join(root, rel) if rel else root))
            except FileNotFoundError:
                if rel == "":
                    return
                raise
            for e in entries:
                r = f"{rel}/{e.name}" if rel else e.name
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(r)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    raise ValueError(
                        f"{base}/{r} is a symbolic link or special file: a table folder "
                        "holds only files and folders (nothing planned)"
                    )
                yield (f"{base}/{r}", st.st_size, st.st_mtime_ns // 1_000_000, None)

    def pointer(self):
        return self._pointer()

    def head(self, uri):
        try:
            st = os.stat(self.path_of(uri), follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{uri} is not a file")
        return (st.st_size, st.st_mtime_ns // 1_000_000, None)

    def delete(self, uri):
        try:
            os.remove(self.path_of(uri))
            return True
        except FileNotFoundError:
            return False

    def _entries(self, folder):
        """One level under the folder URI ``folder``, for :func:`_split_walk`."""
        base = folder.rstrip("/")
        root = self.path_of(base)
        try:
            found = list(os.scandir(root))
        except FileNotFoundError:
            return [], []
        folders, objects = [], []
        for e in found:
            uri = f"{base}/{e.name}"
            if e.is_dir(follow_symlinks=False):
                folders.append(uri + "/")
            elif e.is_file(follow_symlinks=False):
                objects.append((uri, lambda p=e.path: self._version(p)))
            else:
                raise ValueError(f"{uri} is a symbolic link or special file: a table folder "
                                 "holds only files and folders (nothing planned)")
        return folders, objects

    @staticmethod
    def _version(path):
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return (st.st_size, st.st_mtime_ns // 1_000_000, None)

    def list_split(self, split):
        """The pages of one listing split (a dict from
        ``Sweep.split_listing``), its keys ascending."""
        return _pages(_split_walk(split, self._entries))

    def _level(self, base):
        """The entries of the folder URI ``base`` (no trailing ``/``):
        (sorted names of folders, sorted names of files), without a stat;
        anything else refuses the listing."""
        try:
            with os.scandir(self.path_of(base)) as it:
                found = list(it)
        except FileNotFoundError:
            return [], []
        folders = [e.name for e in found if e.is_dir(follow_symlinks=False)]
        files = [e.name for e in found if e.is_file(follow_symlinks=False)]
        if len(folders) + len(files) != len(found):
            odd = next(e.name for e in found if not (e.is_dir(follow_symlinks=False) or e.is_file(follow_symlinks=False)))
            raise ValueError(f"{base}/{odd} is a symbolic link or special file: a table folder "
                             "holds only files and folders (nothing planned)")
        folders.sort()
        files.sort()
        return folders, files

    def folders_of(self, base):
        """The folder URI ``base`` (no trailing ``/``), one level: (the
        names of its folders, how many files beside them), the entries
        counted as they come (a flat folder of millions is not held)."""
        folders, files = [], 0
        try:
            with os.scandir(self.path_of(base)) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        folders.append(e.name)
                    else:
                        files += 1
        except FileNotFoundError:
            pass
        return sorted(folders), files

    def sample_names(self, base, whole, every):
        """Keys under the folder URI ``base`` (no trailing ``/``; its files
        only, or with ``whole`` everything below it), each kept with odds
        of one in ``every`` by a hash of its name: a sample that stands for
        ``every`` keys a name, walked without a stat, held a sample's worth
        at a time. For cutting a listing where its keys are (the cut
        decides the balance, never what is listed)."""
        out, stack = [], [base]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(self.path_of(folder)) as it:
                    for e in it:
                        if e.is_dir(follow_symlinks=False):
                            if whole:
                                stack.append(f"{folder}/{e.name}")
                        elif zlib.crc32(e.name.encode()) % every == 0:
                            out.append(f"{folder}/{e.name}")
            except FileNotFoundError:
                pass
        return out

    def split_name_pages(self, split):
        """The names of one listing split's keys, ascending, in pages of
        at most :data:`PAGE`, without a stat (see :meth:`version`)."""
        after, through = split["after"], split["through"]

        def walk(base):
            folders, files = self._level(base)
            # A folder's keys sort where its name followed by `/` does.
            items = sorted([(f + "/", True) for f in folders] + [(n, False) for n in files])
            run = []
            for name, is_folder in items:
                uri = f"{base}/{name}"
                if through is not None and uri > through:
                    break
                if is_folder:
                    if after is not None and after > uri and not after.startswith(uri):
                        continue
                    if run:
                        yield run
                        run = []
                    yield from walk(uri[:-1])
                elif after is None or uri > after:
                    run.append(uri)
            if run:
                yield run

        page = []
        for run in walk(split["prefix"].rstrip("/")):
            page.extend(run)
            while len(page) >= PAGE:
                yield page[:PAGE]
                page = page[PAGE:]
        if page:
            yield page

    def version(self, uri):
        """``(size, mtime_ms, etag)`` of the object at ``uri``, or ``None``
        when it is gone."""
        return self._version(self.path_of(uri))

    def children(self, prefix):
        """One level under ``prefix``: (folder URIs each ending in ``/``,
        the objects beside them), for splitting a listing."""
        base = prefix.rstrip("/")
        root = self.path_of(base)
        folders, objects = [], []
        try:
            entries = list(os.scandir(root))
        except FileNotFoundError:
            return [], []
        for e in entries:
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                folders.append(f"{base}/{e.name}/")
            elif stat.S_ISREG(st.st_mode):
                objects.append((f"{base}/{e.name}", st.st_size, st.st_mtime_ns // 1_000_000, None))
            else:
                raise ValueError(f"{base}/{e.name} is a symbolic link or special file (nothing planned)")
        return sorted(folders), objects


class ArrowStore:
    """A ``pyarrow.fs`` object store (S3, GCS) under one URI prefix:
    ``scheme://bucket`` maps to the file system's ``bucket``. pyarrow's
    listing trims a trailing ``/`` from keys, so a key with an empty
    segment or ending in ``/`` cannot be told apart from another: a listing
    that holds one refuses the plan (the AWS SDK based hosts list those
    keys as they are)."""

    @staticmethod
    def _plain(path):
        if "//" in path or path.endswith("/"):
            raise ValueError(
                f"{path}: pyarrow.fs cannot spell this key exactly (an empty segment or a trailing /): "
                "plan this table with the lakesweep command (nothing planned)"
            )
        return path

    #: The URI schemes each ``pyarrow.fs`` file system serves.
    SCHEMES = {"s3": ("s3", "s3a", "s3n"), "gcs": ("gs", "gcs"), "hdfs": ("hdfs",)}

    def __init__(self, filesystem, pointer=None):
        self.fs = filesystem
        self._pointer = pointer or (lambda: None)
        self._schemes = self.SCHEMES.get(getattr(filesystem, "type_name", ""), ())

    def _split(self, uri):
        scheme, sep, rest = uri.partition("://")
        if not sep:
            raise ValueError(f"{uri}: not a URI")
        # A URI of another store is never looked up here: `gs://b/k` read
        # through S3 would find nothing and look absent.
        if scheme not in self._schemes:
            raise ValueError(f"{uri}: this store serves {', '.join(self._schemes) or 'no'} URIs")
        return scheme, rest

    def read(self, uri):
        import pyarrow.fs as pafs

        _, path = self._split(uri)
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def list(self, prefix):
        return _pages(self._walk(prefix))

    def _walk(self, prefix):
        import pyarrow.fs as pafs

        scheme, path = self._split(prefix.rstrip("/"))
        sel = pafs.FileSelector(path, recursive=True, allow_not_found=True)
        seen = set()
        for info in self.fs.get_file_info(sel):
            if info.type != pafs.FileType.File:
                continue
            key = self._plain(info.path)
            if key in seen:
                # A key and its `key/` twin, trimmed to one name by pyarrow:
                # which object a plan names could not be told.
                raise ValueError(f"{key}: listed twice by pyarrow.fs (a key and its trailing-/ twin?): nothing planned")
            seen.add(key)
            yield (f"{scheme}://{key}", info.size, info.mtime_ns // 1_000_000, None)

    def pointer(self):
        return self._pointer()

    def head(self, uri):
        import pyarrow.fs as pafs

        _, path = self._split(uri)
        info = self.fs.get_file_info(self._plain(path))
        if info.type == pafs.FileType.NotFound:
            return None
        if info.type != pafs.FileType.File:
            raise ValueError(f"{uri} is not an object")
        return (info.size, info.mtime_ns // 1_000_000, None)

    def delete(self, uri):
        import pyarrow.fs as pafs

        _, path = self._split(uri)
        if self.fs.get_file_info(self._plain(path)).type == pafs.FileType.NotFound:
            return False
        self.fs.delete_file(path)
        return True

    def _entries(self, folder):
        """One level under the folder URI ``folder``, for :func:`_split_walk`."""
        folders, objects = self.children(folder)
        return folders, [(o[0], lambda o=o: o[1:]) for o in objects]

    def list_split(self, split):
        """The pages of one listing split (a dict from
        ``Sweep.split_listing``), its keys ascending. ``pyarrow.fs`` has no
        start-after: a split reads the folders it overlaps whole."""
        return _pages(_split_walk(split, self._entries))

    def sample_boundaries(self, prefix, size, at_most=4096):
        """Keys under ``prefix`` to cut its listing at: its folders, level
        by level, up to ``at_most``. ``pyarrow.fs`` lists no key range, so
        a folder is the finest cut (a flat folder is one split) and
        ``size``, the keys wanted a split, is not used: a folder's size is
        not known before it is listed. Each level's entries pass through
        this process; only the folders are kept."""
        out, level = [], [prefix]
        while level and len(out) < at_most:
            nxt = []
            for f in level:
                folders, _ = self.children(f)
                nxt.extend(folders)
            out.extend(nxt)
            level = nxt
        return sorted(out)[:at_most]

    def children(self, prefix):
        """One level under ``prefix``: (folder URIs, the objects beside them)."""
        import pyarrow.fs as pafs

        scheme, path = self._split(prefix.rstrip("/"))
        folders, objects = [], []
        for info in self.fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True)):
            if info.type == pafs.FileType.Directory:
                folders.append(f"{scheme}://{self._plain(info.path)}/")
            elif info.type == pafs.FileType.File:
                objects.append((f"{scheme}://{self._plain(info.path)}", info.size, info.mtime_ns // 1_000_000, None))
        return sorted(folders), objects
