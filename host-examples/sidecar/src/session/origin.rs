//! How a plan was made (`lakesweep.origin.v1`): where its pointer comes
//! from, its location maps and the context files it was judged with. The
//! sidecar writes it into the session's `origin`; the planner seals it into
//! the plan, so `apply PLAN.json` reads the same sources without retyping
//! them, and an edited origin fails the plan's digest. Options given to
//! `apply` must be the plan's own.

use crate::error::HostError;
use serde_json::{json, Value};

use crate::catalogs::pointer::Pointer;
use crate::session::context::ContextFiles;

/// The schema name of origin documents.
const ORIGIN_SCHEMA: &str = "lakesweep.origin.v1";

/// The sources a plan was made from, paths absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Where the current metadata came from.
    pub pointer: Pointer,
    /// `--location-map` pairs.
    pub location_map: Vec<(String, String)>,
    /// The context files (`--context`, `--leases`, `--holds`, `--writers`).
    pub context: ContextFiles,
}

/// `path` made absolute against the working directory, `.` and `..`
/// resolved as `store::local_uri` does (so `./catalog.db` and its absolute
/// form are one source, and the plan can be applied from anywhere).
fn absolute(path: &str) -> String {
    crate::stores::local_uri(path)
        .ok()
        .and_then(|u| u.strip_prefix("file://").map(str::to_owned))
        .unwrap_or_else(|| path.to_owned())
}

impl Origin {
    /// The origin of a plan made with these options, paths absolute.
    pub fn new(
        pointer: &Pointer,
        location_map: &[(String, String)],
        files: &ContextFiles,
    ) -> Origin {
        let pointer = match pointer {
            Pointer::Catalog {
                catalog,
                namespace,
                name,
            } => Pointer::Catalog {
                catalog: catalog.absolute(absolute),
                namespace: namespace.clone(),
                name: name.clone(),
            },
            p => p.clone(),
        };
        let abs = |f: &Option<String>| f.as_deref().map(absolute);
        Origin {
            pointer,
            location_map: location_map.to_vec(),
            context: ContextFiles {
                policy: None,
                context: abs(&files.context),
                leases: abs(&files.leases),
                holds: abs(&files.holds),
                writers: abs(&files.writers),
            },
        }
    }

    /// The stored document.
    pub fn to_document(&self) -> String {
        let pointer = match &self.pointer {
            Pointer::Explicit(uri) => json!({"metadata": uri}),
            Pointer::VersionHint => json!({"versionHint": true}),
            Pointer::Catalog {
                catalog,
                namespace,
                name,
                // Namespace and name apart: a name may hold dots.
            } => json!({"catalog": catalog.spec(), "namespace": namespace, "name": name}),
            Pointer::Command(c) => json!({"command": c}),
        };
        let c = &self.context;
        json!({
            "schema": ORIGIN_SCHEMA,
            "pointer": pointer,
            "locationMap": self.location_map.iter().map(|(f, t)| json!([f, t])).collect::<Vec<_>>(),
            "contextFiles": {"context": c.context, "leases": c.leases, "holds": c.holds, "writers": c.writers},
        })
        .to_string()
    }

    /// Reads an origin document (as sealed into a plan).
    pub fn parse(text: &str) -> Result<Origin, HostError> {
        let bad = |why: &str| refused!("the plan's origin {why}: plan again with this lakesweep");
        let v: Value = serde_json::from_str(text).map_err(|_| bad("is not JSON"))?;
        if v["schema"] != ORIGIN_SCHEMA {
            return Err(bad(&format!(
                "has schema {}, not {ORIGIN_SCHEMA}",
                v["schema"]
            )));
        }
        let s = |v: &Value| v.as_str().map(str::to_owned);
        let p = &v["pointer"];
        let pointer = if let Some(uri) = s(&p["metadata"]) {
            Pointer::Explicit(uri)
        } else if p["versionHint"] == true {
            Pointer::VersionHint
        } else if let Some(c) = s(&p["command"]) {
            Pointer::Command(c)
        } else if let Some(catalog) = s(&p["catalog"]) {
            match (s(&p["namespace"]), s(&p["name"])) {
                (Some(namespace), Some(name)) if !namespace.is_empty() && !name.is_empty() => {
                    Pointer::Catalog {
                        catalog: crate::catalogs::Catalog::parse(&catalog)
                            .map_err(|e| bad(&format!("names no catalog ({e})")))?,
                        namespace,
                        name,
                    }
                }
                _ => {
                    return Err(bad(
                        "names a catalog but not its table's namespace and name",
                    ))
                }
            }
        } else {
            return Err(bad(&format!(
                "names a pointer this lakesweep does not know ({p})"
            )));
        };
        let location_map = v["locationMap"]
            .as_array()
            .ok_or_else(|| bad("has no locationMap"))?
            .iter()
            .map(|pair| match (s(&pair[0]), s(&pair[1])) {
                (Some(f), Some(t)) => Ok((f, t)),
                _ => Err(bad("has a malformed locationMap")),
            })
            .collect::<Result<_, _>>()?;
        let f = &v["contextFiles"];
        Ok(Origin {
            pointer,
            location_map,
            context: ContextFiles {
                policy: None,
                context: s(&f["context"]),
                leases: s(&f["leases"]),
                holds: s(&f["holds"]),
                writers: s(&f["writers"]),
            },
        })
    }

    /// What `apply` uses: the plan's own sources. A pointer or location
    /// maps given on the command line must be the plan's own (a plan is
    /// applied against the table it was judged on), else the run is
    /// refused. A context file given is read instead of the plan's file of
    /// the same kind; the kinds not given stay the plan's. A plan read from
    /// a fixed `--metadata` had no live pointer: `apply` needs one, so then
    /// the one given is used (`version-hint.text` when none is).
    pub fn for_apply(
        &self,
        pointer: Option<&Pointer>,
        location_map: &[(String, String)],
        files: &ContextFiles,
    ) -> Result<Origin, HostError> {
        if let Pointer::Explicit(_) = self.pointer {
            // Made absolute like the plan's own paths.
            let given = Origin::new(
                pointer.unwrap_or(&Pointer::VersionHint),
                &[],
                &ContextFiles::default(),
            );
            let live = Origin {
                pointer: given.pointer,
                ..self.clone()
            };
            return live.for_apply(None, location_map, files);
        }
        if let (Pointer::Command(c), None) = (&self.pointer, pointer) {
            // A plan file does not choose what apply runs with its credentials.
            return Err(refused!(
                "the plan reads its pointer with a command: give apply the same --pointer-cmd '{c}'"
            ));
        }
        let given = Origin::new(
            pointer.unwrap_or(&self.pointer),
            if location_map.is_empty() {
                &self.location_map
            } else {
                location_map
            },
            files,
        );
        let mut differences = Vec::new();
        if given.pointer != self.pointer {
            differences.push(format!(
                "its pointer was {}, the command line says {}",
                self.pointer.describe(),
                given.pointer.describe()
            ));
        }
        if given.location_map != self.location_map {
            differences.push("its --location-map differs".to_owned());
        }
        if differences.is_empty() {
            // A context file given here is read instead of the plan's file
            // of the same kind; every kind not given stays the plan's, so
            // no file the plan was judged with is ever dropped (a hold
            // published in it since refuses the plan).
            let mine = &self.context;
            let theirs = given.context;
            let context = ContextFiles {
                policy: None,
                context: theirs.context.or_else(|| mine.context.clone()),
                leases: theirs.leases.or_else(|| mine.leases.clone()),
                holds: theirs.holds.or_else(|| mine.holds.clone()),
                writers: theirs.writers.or_else(|| mine.writers.clone()),
            };
            return Ok(Origin {
                context,
                ..self.clone()
            });
        }
        Err(refused!(
            "the plan was made from other sources than these options name ({}): leave the options out (the plan records its own), or plan again",
            differences.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_reads_back_and_options_must_match_it() {
        let files = ContextFiles {
            holds: Some("/etc/holds.json".into()),
            ..ContextFiles::default()
        };
        let pointer = Pointer::Catalog {
            catalog: crate::catalogs::Catalog::Sql {
                path: "/var/catalog.db".into(),
            },
            namespace: "db".into(),
            name: "events".into(),
        };
        let maps = vec![("s3://old".to_owned(), "file:///new".to_owned())];
        let o = Origin::new(&pointer, &maps, &files);
        let back = Origin::parse(&o.to_document()).unwrap();
        assert_eq!(back, o);
        // Nothing given: the plan's own sources.
        assert_eq!(o.for_apply(None, &[], &ContextFiles::default()).unwrap(), o);
        // The same, given again: fine.
        assert_eq!(o.for_apply(Some(&pointer), &maps, &files).unwrap(), o);
        // Another pointer or map: refused.
        let e = o
            .for_apply(Some(&Pointer::VersionHint), &[], &ContextFiles::default())
            .unwrap_err();
        assert!(e.contains("its pointer was"), "{e}");
        let other_map = vec![("s3://x".to_owned(), "file:///y".to_owned())];
        assert!(o
            .for_apply(None, &other_map, &ContextFiles::default())
            .is_err());
        // Context files given are read instead of the plan's (the
        // acceptance then compares the context they make).
        let other_files = ContextFiles {
            holds: Some("/tmp/other.json".into()),
            ..ContextFiles::default()
        };
        let read = o.for_apply(None, &[], &other_files).unwrap();
        assert_eq!(read.context.holds.as_deref(), Some("/tmp/other.json"));
        assert_eq!(read.pointer, o.pointer);
        // A file of another kind given: the plan's holds file is still read.
        let leases_only = ContextFiles {
            leases: Some("/etc/leases.json".into()),
            ..ContextFiles::default()
        };
        let read = o.for_apply(None, &[], &leases_only).unwrap();
        assert_eq!(read.context.holds.as_deref(), Some("/etc/holds.json"));
        assert_eq!(read.context.leases.as_deref(), Some("/etc/leases.json"));
        // A plan read from a fixed --metadata: apply takes a live pointer.
        let fixed = Origin::new(&Pointer::Explicit("s3://b/t/m.json".into()), &[], &files);
        let live = fixed
            .for_apply(Some(&pointer), &[], &ContextFiles::default())
            .unwrap();
        assert_eq!(live.pointer, Origin::new(&pointer, &[], &files).pointer);
        let hint = fixed
            .for_apply(None, &[], &ContextFiles::default())
            .unwrap();
        assert_eq!(hint.pointer, Pointer::VersionHint);
        // A relative catalog path names the same catalog as its absolute form.
        let relative = Pointer::Catalog {
            catalog: crate::catalogs::Catalog::Sql {
                path: "catalog.db".into(),
            },
            namespace: "db".into(),
            name: "events".into(),
        };
        let live = fixed
            .for_apply(Some(&relative), &[], &ContextFiles::default())
            .unwrap();
        assert_eq!(live.pointer, Origin::new(&relative, &[], &files).pointer);
        // Dot segments name the same catalog.
        let dotted = Pointer::Catalog {
            catalog: crate::catalogs::Catalog::Sql {
                path: "./x/../catalog.db".into(),
            },
            namespace: "db".into(),
            name: "events".into(),
        };
        assert_eq!(
            Origin::new(&dotted, &[], &files).pointer,
            Origin::new(&relative, &[], &files).pointer
        );
        // Every kind of pointer reads back.
        for p in [
            Pointer::Command("lookup db.events".into()),
            Pointer::Catalog {
                catalog: crate::catalogs::Catalog::parse("rest:http://h:8181?warehouse=w").unwrap(),
                namespace: "a.b".into(),
                name: "t".into(),
            },
            Pointer::Catalog {
                catalog: crate::catalogs::Catalog::parse("glue").unwrap(),
                namespace: "db".into(),
                name: "t".into(),
            },
            // A name with a dot stays one name.
            Pointer::Catalog {
                catalog: crate::catalogs::Catalog::parse("glue").unwrap(),
                namespace: "db".into(),
                name: "x.y".into(),
            },
        ] {
            let o = Origin::new(&p, &[], &files);
            assert_eq!(Origin::parse(&o.to_document()).unwrap(), o);
        }
        for bad in [
            "{}",
            "[",
            r#"{"schema":"lakesweep.origin.v1","pointer":{}}"#,
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }
}
