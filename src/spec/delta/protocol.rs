//! The table's protocol: reader and writer versions and features, and
//! the check that refuses what a sweeper cannot vouch for (each feature
//! decided in [`crate::spec::delta_feature`]).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The table's protocol action.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    /// Minimum reader version.
    pub min_reader_version: i64,
    /// Minimum writer version.
    pub min_writer_version: i64,
    /// Reader features (reader version 3).
    #[serde(default)]
    pub reader_features: Option<Vec<String>>,
    /// Writer features (writer version 7).
    #[serde(default)]
    pub writer_features: Option<Vec<String>>,
}

impl Protocol {
    /// True when the writer features name `f`.
    pub fn has_writer_feature(&self, f: &str) -> bool {
        self.writer_features
            .as_ref()
            .is_some_and(|v| v.iter().any(|x| x == f))
    }
}

/// Refuses (unsupported) a protocol this planner cannot sweep safely: a
/// reader version outside 1–3, a writer version outside 1–7, or a feature
/// [`crate::spec::delta_feature`] refuses.
pub fn check_protocol(uri: &str, p: &Protocol) -> Result<()> {
    if !(1..=3).contains(&p.min_reader_version) {
        return Err(Error::unsupported(
            format!("Delta reader version {}", p.min_reader_version),
            uri,
        ));
    }
    if !(1..=7).contains(&p.min_writer_version) {
        return Err(Error::unsupported(
            format!("Delta writer version {}", p.min_writer_version),
            uri,
        ));
    }
    // Each feature once, decided by the table in `delta_feature`.
    let listed = p
        .reader_features
        .iter()
        .flatten()
        .map(|f| (f, true))
        .chain(p.writer_features.iter().flatten().map(|f| (f, false)));
    for (f, reader) in listed {
        if let Some(why) = crate::spec::delta_feature::refusal(f, reader) {
            return Err(Error::unsupported(why, uri));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_features() {
        let ok = Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: Some(vec!["deletionVectors".into()]),
            writer_features: Some(vec!["deletionVectors".into(), "appendOnly".into()]),
        };
        check_protocol("u", &ok).unwrap();
        let unknown = Protocol {
            reader_features: Some(vec!["deletionVectors".into(), "fancyNewThing".into()]),
            ..ok.clone()
        };
        let e = check_protocol("u", &unknown).unwrap_err();
        assert!(e.to_string().contains("fancyNewThing"), "{e}");
        let catalog = Protocol {
            writer_features: Some(vec!["catalogManaged".into()]),
            ..ok.clone()
        };
        assert!(check_protocol("u", &catalog).is_err());
        let v4 = Protocol {
            min_reader_version: 4,
            ..ok
        };
        assert!(check_protocol("u", &v4).is_err());
    }
}
