//! `--json`: every JSON object lockbox prints, one per line (NDJSON), in
//! the shapes docs/JSON.md documents. Each object has a `"type"`; the last
//! line of every command is its `"summary"`.
//!
//! Names are bytes: one that is valid UTF-8 is a JSON string; one that is
//! not is written lossily in the same field (U+FFFD for bad bytes), with
//! its exact bytes in base64 beside it (`"path_base64"`), so no name is
//! lost or mistaken for another.

use std::io::{self, BufWriter, StdoutLock, Write};

use base64::Engine as _;
use revault_lockbox_api::create::CreateReport;
use revault_lockbox_api::diff::Difference;
use revault_lockbox_api::read::{ArchiveInfo, Damage, ExtractReport, SessionSigners, VerifyReport};
use revault_lockbox_api::slots::{SlotInfo, SlotKind};
use revault_lockbox_api::{Entry, EntryKind, KdfParams};
use serde_json::{json, Map, Value};

/// NDJSON on stdout.
pub struct Lines {
    out: BufWriter<StdoutLock<'static>>,
}

impl Lines {
    pub fn stdout() -> Lines {
        Lines { out: BufWriter::new(io::stdout().lock()) }
    }

    /// Writes `value` as one line.
    pub fn write(&mut self, value: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, value)?;
        self.out.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Sets `key` to the name `bytes`, adding `{key}_base64` when they are
/// not UTF-8.
pub(super) fn put_name(map: &mut Map<String, Value>, key: &str, bytes: &[u8]) {
    map.insert(key.into(), String::from_utf8_lossy(bytes).into_owned().into());
    if std::str::from_utf8(bytes).is_err() {
        let exact = base64::engine::general_purpose::STANDARD.encode(bytes);
        map.insert(format!("{key}_base64"), exact.into());
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("json! of an object"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `list --json`: one entry.
pub fn entry(e: &Entry) -> Value {
    let kind = match &e.kind {
        EntryKind::Dir => "dir",
        EntryKind::File { .. } => "file",
        EntryKind::Symlink { .. } => "symlink",
        EntryKind::Hardlink { .. } => "hardlink",
        _ => "unknown",
    };
    let mut map = object(json!({
        "type": "entry",
        "kind": kind,
        "mode": e.meta.mode,
        "uid": e.meta.uid,
        "gid": e.meta.gid,
        "mtime": e.meta.mtime_secs,
        "mtime_nanos": e.meta.mtime_nanos,
    }));
    put_name(&mut map, "path", &e.path);
    for (key, name) in [("user", e.meta.user.as_deref()), ("group", e.meta.group.as_deref())] {
        if let Some(name) = name {
            put_name(&mut map, key, name);
        }
    }
    if !e.meta.xattrs.is_empty() {
        let names = e.meta.xattrs.iter().map(|x| String::from_utf8_lossy(&x.name).into_owned());
        map.insert("xattrs".into(), names.collect::<Vec<_>>().into());
    }
    if let Some(map_) = e.sparse_map() {
        map.insert("stored_size".into(), map_.stored_len().into());
    }
    if let Some((size, sha256)) = e.content() {
        map.insert("size".into(), size.into());
        map.insert("sha256".into(), hex(sha256).into());
    }
    if let EntryKind::Symlink { target, .. } | EntryKind::Hardlink { target, .. } = &e.kind {
        put_name(&mut map, "target", target);
    }
    Value::Object(map)
}

/// `diff --json`: one difference. `on_disk`: the new side is a directory,
/// whose files' digests were not all computed, so none is shown.
pub fn difference(d: &Difference, on_disk: bool) -> Value {
    let side = |e: &Entry, disk: bool| {
        let mut map = object(entry(e));
        map.remove("type");
        if disk {
            map.remove("sha256");
        }
        Value::Object(map)
    };
    let (kind, old, new, changes) = match d {
        Difference::Added(e) => ("added", None, Some(e), None),
        Difference::Removed(e) => ("removed", Some(e), None, None),
        Difference::Changed { old, new, changes } => ("changed", Some(old), Some(new), Some(changes)),
        _ => ("unknown", None, None, None),
    };
    let mut map = object(json!({ "type": kind }));
    put_name(&mut map, "path", d.path());
    if let Some(changes) = changes {
        map.insert("changes".into(), super::diff::changed(changes).into());
    }
    if let Some(old) = old {
        map.insert("old".into(), side(old, false));
    }
    if let Some(new) = new {
        map.insert("new".into(), side(new, on_disk));
    }
    Value::Object(map)
}

/// Counts of `list --json`'s summary.
#[derive(Default)]
pub struct ListCounts {
    pub entries: u64,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    pub content_bytes: u64,
}

impl ListCounts {
    pub fn add(&mut self, e: &Entry) {
        self.entries += 1;
        match &e.kind {
            EntryKind::Dir => self.dirs += 1,
            EntryKind::File { size, .. } => {
                self.files += 1;
                self.content_bytes += size;
            }
            EntryKind::Symlink { .. } => self.symlinks += 1,
            EntryKind::Hardlink { .. } => self.hardlinks += 1,
            _ => {}
        }
    }

    pub fn summary(&self) -> Value {
        json!({
            "type": "summary",
            "command": "list",
            "entries": self.entries,
            "files": self.files,
            "dirs": self.dirs,
            "symlinks": self.symlinks,
            "hardlinks": self.hardlinks,
            "content_bytes": self.content_bytes,
        })
    }
}

/// An entry `verify` or `extract --keep-going` found damaged.
pub fn damaged(d: &Damage) -> Value {
    let mut map = object(json!({ "type": "damaged", "reason": d.reason }));
    put_name(&mut map, "path", d.path.as_bytes());
    Value::Object(map)
}

/// Something a salvage scan could not prove (no entry to name).
pub fn lost(what: &str) -> Value {
    json!({ "type": "lost", "what": what })
}

/// An entry `extract` restored without some of its metadata.
pub fn extract_warning(d: &Damage) -> Value {
    let mut map = object(json!({ "type": "warning", "reason": d.reason }));
    put_name(&mut map, "path", d.path.as_bytes());
    Value::Object(map)
}

/// A data page `verify` found damaged.
pub fn damaged_page(reason: &str) -> Value {
    json!({ "type": "damaged_page", "reason": reason })
}

pub fn verify_summary(r: &VerifyReport) -> Value {
    json!({
        "type": "summary",
        "command": "verify",
        "ok": r.is_ok(),
        "entries": r.entries,
        "files": r.files,
        "bytes": r.bytes,
        "pages": r.pages,
        "damaged_entries": r.damaged.len(),
        "damaged_pages": r.damaged_pages.len(),
        "lost": r.lost.len(),
    })
}

pub fn extract_summary(report: &ExtractReport) -> Value {
    json!({
        "type": "summary",
        "command": "extract",
        "ok": report.damaged.is_empty() && report.lost.is_empty(),
        "entries": report.entries,
        "bytes": report.bytes,
        "damaged_entries": report.damaged.len() + report.lost.len(),
        "skipped_entries": report.skipped,
    })
}

/// A warning of `create` (a file skipped or changed while read).
pub fn warning(message: &str) -> Value {
    json!({ "type": "warning", "message": message })
}

pub fn create_summary(archive: &std::path::Path, r: &CreateReport) -> Value {
    let mut map = object(json!({
        "type": "summary",
        "command": "create",
        "entries": r.entries,
        "content_bytes": r.content_bytes,
        "archive_bytes": r.archive_bytes,
        "warnings": r.warnings.len(),
    }));
    use std::os::unix::ffi::OsStrExt;
    put_name(&mut map, "archive", archive.as_os_str().as_bytes());
    Value::Object(map)
}

fn kdf(k: &KdfParams) -> Value {
    json!({ "algorithm": "argon2id", "memory_kib": k.m_kib, "passes": k.t, "lanes": k.p })
}

/// `info --json`: the summary is the whole answer.
pub fn info_summary(info: &ArchiveInfo) -> Value {
    json!({
        "type": "summary",
        "command": "info",
        "version": info.version,
        "kdf": info.kdf.iter().map(kdf).collect::<Vec<_>>(),
        "files": info.files,
        "dirs": info.dirs,
        "symlinks": info.symlinks,
        "hardlinks": info.hardlinks,
        "content_bytes": info.content_bytes,
        "deduplicated_bytes": info.deduplicated_bytes,
        "archive_bytes": info.archive_bytes,
        "compression_ratio": super::text::ratio(info),
        "pages": info.pages,
        "raw_pages": info.raw_pages,
        "stored_page_bytes": info.stored_page_bytes,
        "index_bytes": info.index_bytes,
        "sessions": info.sessions,
        "runs": info.runs,
        "dead_bytes": info.dead_bytes,
        "torn_tail_bytes": info.torn_tail_bytes,
        "key_slots": info.key_slots,
        "last_session": info.last_session,
        "state": info.state,
        "last_session_created_ns": info.last_session_created_ns,
        "last_session_label": info.last_session_label,
        "commit_hash": info.commit_hash.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "signers": info.signers.iter().map(session_signers).collect::<Vec<_>>(),
    })
}

/// One session's signatures: `{"session", "state", "signatures": [{"signer", "valid", "adopts"}]}`
/// (`session` its number, `state` as `log` numbers it).
pub fn session_signers(s: &SessionSigners) -> Value {
    let signatures: Vec<Value> = s
        .signatures
        .iter()
        .map(|c| json!({ "signer": c.signer.map(|f| f.to_string()), "valid": c.valid, "adopts": c.adopts }))
        .collect();
    json!({ "session": s.session.number, "state": s.session.state, "signatures": signatures })
}

/// `key list --json`: one slot, with `"label"` when it has one.
pub fn slot(s: &SlotInfo) -> Value {
    let mut value = slot_kind(s);
    if !s.label.is_empty() {
        value["label"] = s.label.clone().into();
    }
    value
}

fn slot_kind(s: &SlotInfo) -> Value {
    match &s.kind {
        SlotKind::Password(k) => {
            json!({ "type": "slot", "slot": s.index, "kind": "password", "kdf": kdf(k) })
        }
        SlotKind::Recipient(types) => {
            json!({ "type": "slot", "slot": s.index, "kind": "recipient", "recipient_types": types })
        }
        SlotKind::KeyFile => json!({ "type": "slot", "slot": s.index, "kind": "key_file" }),
        _ => json!({ "type": "slot", "slot": s.index, "kind": "unknown" }),
    }
}

pub fn slots_summary(slots: usize) -> Value {
    json!({ "type": "summary", "command": "key list", "slots": slots })
}
