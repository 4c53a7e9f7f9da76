//! HTTP for requests that change something (a Pinot segment DELETE, a
//! REST catalog commit): one client that never follows a redirect, and
//! the answer as the planner judges it (`judge-mutation`). This module
//! decides nothing about what an answer means.

use crate::component::wt;
use crate::error::HostError;

/// A client for requests that change something: redirects are never
/// followed (a 3xx is the planner's `unknown`), with bounded waits.
pub fn mutating_client() -> Result<reqwest::Client, HostError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| store_err!("http client: {e}"))
}

/// The answer as the planner takes it: the status, a redirect's
/// Location, the body's first words or the transport error, and whether
/// the request was never sent (no connection opened).
pub async fn answer(r: Result<reqwest::Response, reqwest::Error>) -> wt::MutationAnswer {
    match r {
        Ok(r) => {
            let status = r.status().as_u16();
            let location = r
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body: String = r
                .text()
                .await
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            wt::MutationAnswer {
                status: Some(status),
                location,
                error: (!body.is_empty()).then_some(body),
                not_sent: false,
            }
        }
        Err(e) => wt::MutationAnswer {
            status: None,
            location: None,
            not_sent: e.is_connect(),
            error: Some(e.to_string()),
        },
    }
}
