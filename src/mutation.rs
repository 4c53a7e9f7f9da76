//! What a request that changes something (a DELETE, a PUT, a catalog
//! commit) came to, judged from the answer the host got, never by the host.
//!
//! Rules, the same for every host and every such request:
//! - a request that changes anything is sent once and never follows a
//!   redirect: a 3xx answer means the request was not carried out where it
//!   was aimed, and whether anything happened elsewhere is unknown;
//! - 2xx: done; 404 (or 410): the target was already gone;
//! - 408, 429 and every 5xx, a lost answer or a broken connection after
//!   sending: unknown (the server may have acted), settled only by reading
//!   the state again, never recorded as done;
//! - any other 4xx: refused, nothing happened;
//! - a connection that never opened: nothing was sent, refused.

use serde::{Deserialize, Serialize};

/// The answer to a request that changes something, as the host got it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutationAnswer {
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    /// The `Location` header of a redirect, if any (for the record only:
    /// it is never followed).
    #[serde(default)]
    pub location: Option<String>,
    /// What went wrong when no answer came (timeout, reset), or the
    /// answer's body in a few words.
    #[serde(default)]
    pub error: Option<String>,
    /// True when the request was never sent (the connection never
    /// opened): nothing can have happened.
    #[serde(default)]
    pub not_sent: bool,
}

/// What a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MutationOutcome {
    /// The server carried it out.
    Done,
    /// The target was already gone (a delete's 404 or 410).
    Absent,
    /// The server refused it, or it was never sent: nothing happened.
    Refused,
    /// It may or may not have happened: read the state again to settle.
    Unknown,
}

/// Judges `answer` to the request `what` (`DELETE …/segments/x`), with the
/// reason in words.
pub fn judge_mutation(what: &str, answer: &MutationAnswer) -> (MutationOutcome, String) {
    let detail = answer
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let Some(status) = answer.status else {
        if answer.not_sent {
            return (
                MutationOutcome::Refused,
                format!("{what} was never sent (no connection){detail}"),
            );
        }
        return (
            MutationOutcome::Unknown,
            format!("{what} got no answer{detail}: the server may have carried it out; read the state again to settle it"),
        );
    };
    match status {
        200..=299 => (MutationOutcome::Done, format!("{what}: {status}")),
        404 | 410 => (
            MutationOutcome::Absent,
            format!("{what}: {status}, already gone"),
        ),
        300..=399 => (
            MutationOutcome::Unknown,
            format!(
                "{what} was answered {status}, a redirect{}: not followed (a request that changes anything never follows one); whether anything happened is unknown, read the state again to settle it",
                answer
                    .location
                    .as_deref()
                    .map(|l| format!(" to `{l}`"))
                    .unwrap_or_default()
            ),
        ),
        408 | 429 | 500..=599 => (
            MutationOutcome::Unknown,
            format!("{what}: {status}{detail}: the server may have carried it out; read the state again to settle it"),
        ),
        400..=499 => (
            MutationOutcome::Refused,
            format!("{what}: {status}, refused{detail}"),
        ),
        _ => (
            MutationOutcome::Unknown,
            format!("{what}: an answer of status {status}{detail}: read the state again to settle it"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(status: Option<u16>) -> MutationOutcome {
        judge_mutation(
            "DELETE /x",
            &MutationAnswer {
                status,
                ..Default::default()
            },
        )
        .0
    }

    #[test]
    fn only_a_2xx_is_done_and_a_redirect_is_never_done() {
        for s in 200..300 {
            assert_eq!(judged(Some(s)), MutationOutcome::Done);
        }
        for s in 300..400 {
            assert_eq!(judged(Some(s)), MutationOutcome::Unknown, "{s}");
        }
        for s in [404, 410] {
            assert_eq!(judged(Some(s)), MutationOutcome::Absent);
        }
        for s in [400, 401, 403, 409, 412, 422] {
            assert_eq!(judged(Some(s)), MutationOutcome::Refused, "{s}");
        }
        for s in [408, 429, 500, 502, 503, 504, 599, 600, 0] {
            assert_eq!(judged(Some(s)), MutationOutcome::Unknown, "{s}");
        }
        assert_eq!(judged(None), MutationOutcome::Unknown);
        let never = MutationAnswer {
            not_sent: true,
            ..Default::default()
        };
        assert_eq!(judge_mutation("x", &never).0, MutationOutcome::Refused);
        let (_, why) = judge_mutation(
            "DELETE /segments/t/a",
            &MutationAnswer {
                status: Some(307),
                location: Some("/segments/t/b".into()),
                ..Default::default()
            },
        );
        assert!(
            why.contains("not followed") && why.contains("/segments/t/b"),
            "{why}"
        );
    }
}
