//! The session's side of an Iceberg sweep: it applies what the Iceberg
//! half (`plan::iceberg`) computes from each document, list and manifest
//! (references to keep, blobs to read, warnings) to the keep set, the
//! requests and the plan's records. The half never calls back up here.

use super::{Machine, Session};
use crate::error::{Error, MalformedReason, Result, UnsafeReason};
use crate::plan::iceberg::{
    identify, lineage, read_manifest, walk, write_roots, ManifestRead, PointerDoc,
};
use crate::plan::manifest_digest::ManifestPath;
use crate::plan::requests::Purpose;
use crate::reach::Source;
use crate::spec::iceberg::{read_manifest_list, TableMetadata};

impl Session {
    /// A document an earlier read of the run named (`None`: gone now).
    pub(super) fn process_prior_pointer(
        &mut self,
        uri: &str,
        bytes: Option<&[u8]>,
        read: u32,
    ) -> Result<()> {
        let lineage = match bytes {
            Some(b) => {
                let l = TableMetadata::probe_lineage(uri, b)?;
                Some(lineage(
                    l.last_sequence_number,
                    &l.metadata_log,
                    &self.config.location_map,
                ))
            }
            None => None,
        };
        self.ice()?.note_pointer_doc(PointerDoc {
            read,
            uri: uri.to_owned(),
            lineage,
        })
    }

    /// The document the pointer names: the table identified and checked
    /// (policy binding, `gc.enabled`), its write roots found, and
    /// everything its snapshots reach walked.
    pub(super) fn process_metadata(&mut self, uri: &str, bytes: &[u8], read: u32) -> Result<()> {
        let md = TableMetadata::parse(uri, bytes)?;
        let lineage = lineage(
            md.last_sequence_number,
            &md.metadata_log,
            &self.config.location_map,
        );
        self.ice()?.note_pointer_doc(PointerDoc {
            read,
            uri: uri.to_owned(),
            lineage: Some(lineage),
        })?;
        let adopt = identify(
            uri,
            &md,
            &self.classifier.location,
            &self.config.location_map,
            self.classifier.table_uuid.as_deref(),
        )?;
        if adopt.is_some() {
            self.classifier.table_uuid = adopt;
        }
        if let Some(p) = &self.policy {
            p.ensure_binds(&md)?;
        }
        self.ice()?.pointer_sequence = md.last_sequence_number;
        self.ice()?.pointer_snapshots = md.snapshots.len() as u64;
        // Set once, from the first metadata read, before anything is listed.
        if self.classifier.roots.is_empty() && !self.state.listing_requested() {
            let (roots, warnings) =
                write_roots(&md, &self.classifier.location, &self.config.location_map);
            self.classifier.roots = roots;
            self.warnings.extend(warnings);
        }
        if !md.gc_enabled() {
            return Err(Error::unsafe_(
                UnsafeReason::GcDisabled,
                "table property gc.enabled=false forbids deleting files",
            ));
        }
        self.reference_mapped(uri, uri, uri, Source::CurrentMetadata)?;
        for f in &md.metadata_log {
            self.reference(uri, f, Source::MetadataLog)?;
        }
        self.classifier
            .partition_names
            .extend(md.partition_field_names.iter().cloned());
        self.refs = md
            .refs
            .iter()
            .map(|(k, r)| (k.clone(), r.snapshot_id))
            .collect();
        let dr_files: Vec<String> = self
            .classifier
            .protections
            .dr_checkpoints
            .iter()
            .filter_map(|d| match d {
                crate::context::DrCheckpoint::MetadataFile(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        for f in dr_files {
            let canon = self.reference_blob(uri, &f, Source::DrCheckpoint)?;
            self.requests.read(canon, Purpose::DrMetadata);
        }
        self.walk_snapshots(uri, &md)
    }

    /// Records what `md` (read from `uri`) references and requests every
    /// manifest list (or v1 manifest) of its snapshots, as [`walk`] says.
    pub(super) fn walk_snapshots(&mut self, uri: &str, md: &TableMetadata) -> Result<()> {
        let w = walk(md);
        for (raw, source) in w.references {
            self.reference(uri, &raw, source)?;
        }
        self.readable.extend(w.snapshots);
        let mut checks = w.checks;
        for r in w.reads {
            let canon = self.reference_blob(uri, &r.raw, r.source)?;
            let check = &mut checks[r.check];
            match r.purpose {
                Purpose::ManifestList { .. } => check.list = Some(canon.clone()),
                _ => check.embedded.push(canon.clone()),
            }
            self.requests.read(canon, r.purpose);
        }
        self.ice()?.summary_checks.extend(checks);
        Ok(())
    }

    /// A manifest list was read: its manifests are kept and read.
    pub(super) fn process_manifest_list(&mut self, uri: &str, bytes: &[u8]) -> Result<()> {
        let entries = read_manifest_list(uri, bytes)?;
        let list_short = self.short(uri);
        let mut named = Vec::with_capacity(entries.len());
        for m in entries {
            let canon = self.reference_blob(
                uri,
                &m.path,
                Source::Manifest {
                    listed_in: list_short.clone(),
                },
            )?;
            named.push(canon.clone());
            self.requests.read(
                canon,
                Purpose::Manifest {
                    expected_len: m.length,
                    added_by: m.added_snapshot_id,
                },
            );
        }
        self.ice()?.record_list(uri, named);
        Ok(())
    }

    /// A manifest was read: its files are kept, its counts recorded.
    pub(super) fn process_manifest(
        &mut self,
        uri: &str,
        bytes: &[u8],
        expected_len: Option<u64>,
        added_by: Option<i64>,
    ) -> Result<()> {
        let read = read_manifest(
            uri,
            bytes,
            expected_len,
            added_by,
            self.config.keep_deleted_entries,
        )?;
        self.keep_manifest(uri, read)
    }

    /// What a manifest holds (read from its bytes or its digest): its
    /// counts recorded, its files kept. While the keep set is first built
    /// (before the listing) a plain key is deferred ([`KeepSet::defer`]:
    /// no lookup per file), its graph role checked when it is merged; the
    /// set is settled before anything asks it (see `start_listing`).
    ///
    /// [`KeepSet::defer`]: crate::reach::KeepSet::defer
    pub(super) fn keep_manifest(&mut self, uri: &str, read: ManifestRead) -> Result<()> {
        let manifest_short = self.short(uri);
        self.ice()?.record_manifest(uri, read.counts);
        let first_build = !self.state.listing_requested();
        // Source ids by (content, status): a manifest's files share a few.
        let mut ids: [[Option<u32>; 3]; 3] = [[None; 3]; 3];
        let source = |content, status| Source::ContentFile {
            manifest: manifest_short.clone(),
            content,
            status,
        };
        for (status, content, path) in read.files {
            if first_build && self.references.may_defer() {
                let fp = match &path {
                    ManifestPath::Text(raw) => {
                        self.references
                            .deferrable(&self.classifier, &self.config.location_map, raw)
                    }
                    ManifestPath::Key(fp) => Some(*fp),
                };
                if let Some(fp) = fp {
                    // A reason is interned only for a key it keeps.
                    let id = *ids[content as usize][status as usize].get_or_insert_with(|| {
                        self.classifier.keep.source_id(source(content, status))
                    });
                    self.classifier.keep.defer(fp, id);
                    continue;
                }
            }
            match path {
                ManifestPath::Text(raw) => self.reference(uri, &raw, source(content, status))?,
                ManifestPath::Key(fp) => self.references.keep_plain_fingerprint(
                    &mut self.classifier,
                    uri,
                    &format!("(key {fp:016x}, resolved where the manifest was read)"),
                    fp,
                    source(content, status),
                )?,
            }
        }
        self.check_role_conflict()
    }

    /// Refuses the plan once a merge of the keep set found a key named in
    /// two roles of the metadata graph (see [`KeepSet::role_conflict`]).
    ///
    /// [`KeepSet::role_conflict`]: crate::reach::KeepSet::role_conflict
    pub(super) fn check_role_conflict(&self) -> Result<()> {
        match self.classifier.keep.role_conflict() {
            None => Ok(()),
            Some((a, b)) => Err(Error::malformed(
                MalformedReason::Inconsistent,
                &self.metadata_location,
                format!(
                    "cycle in the metadata graph: one path is named as a {} ({}) and as a {} ({})",
                    a.graph_role().unwrap_or("file"),
                    a.describe(),
                    b.graph_role().unwrap_or("file"),
                    b.describe()
                ),
            )),
        }
    }

    /// See [`IcebergSweep::check_summaries`](crate::plan::iceberg::IcebergSweep::check_summaries) (a Delta session has none).
    pub(super) fn check_summaries(&mut self) -> Result<()> {
        let metadata_location = self.metadata_location.clone();
        match &mut self.machine {
            Machine::Iceberg(i) => {
                let warnings = i.check_summaries(&metadata_location)?;
                self.warnings.extend(warnings);
                Ok(())
            }
            Machine::Delta(_) => Ok(()),
        }
    }

    /// See [`IcebergSweep::note_stray_document`](crate::plan::iceberg::IcebergSweep::note_stray_document) (only an Iceberg session
    /// judges stray documents against its pointer).
    pub(super) fn note_stray_document(&mut self, uri: &str, rel: &str, bytes: &[u8]) {
        let doc = crate::verdict::stray_document(
            uri,
            rel,
            bytes,
            self.classifier.table_uuid.as_deref(),
            &self.config.location_map,
        );
        if let (Machine::Iceberg(i), Some(doc)) = (&mut self.machine, doc) {
            i.note_stray_document(doc);
        }
    }

    /// See [`IcebergSweep::judge_stray_documents`](crate::plan::iceberg::IcebergSweep::judge_stray_documents).
    pub(super) fn check_stray_documents(&mut self) -> Result<()> {
        let Some(i) = self.iceberg() else {
            return Ok(());
        };
        let keep = &self.classifier.keep;
        let warnings = i.judge_stray_documents(
            &self.metadata_location,
            |rel| keep.references_document(rel),
            self.config.pointer_authoritative,
        )?;
        self.warnings.extend(warnings);
        Ok(())
    }

    /// The metadata document a disaster-recovery checkpoint names: it must
    /// be this table's, and everything its snapshots read stays, so it can
    /// be restored.
    pub(super) fn process_dr_metadata(&mut self, uri: &str, bytes: &[u8]) -> Result<()> {
        let md = TableMetadata::parse(uri, bytes)?;
        if md.table_uuid != self.classifier.table_uuid {
            return Err(Error::invalid(
                "context.drCheckpoints",
                format!(
                    "`{uri}` is table {}, not this table",
                    md.table_uuid.as_deref().unwrap_or("(no uuid)")
                ),
            ));
        }
        // Everything the checkpoint's snapshots read stays, so it can be restored.
        self.walk_snapshots(uri, &md)
    }
}
