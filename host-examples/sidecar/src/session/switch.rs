//! Reading stop switches: each URI the planner names, read now and
//! reported as the store answered (absent, the content, or the failure).
//! Whether a reading stops anything is the planner's decision.

use crate::component::wt;
use crate::stores::Store;

/// Each of `uris`, read now, in order.
pub async fn read_switches(uris: &[String]) -> Vec<wt::SwitchReading> {
    let mut out = Vec::with_capacity(uris.len());
    for uri in uris {
        let answer = match Store::for_uri(uri) {
            Err(e) => wt::SwitchAnswer::Failed(e.to_string()),
            Ok(store) => match store.read(uri).await {
                Ok(None) => wt::SwitchAnswer::Absent,
                Ok(Some(bytes)) => {
                    wt::SwitchAnswer::Present(String::from_utf8_lossy(&bytes).into_owned())
                }
                Err(e) => wt::SwitchAnswer::Failed(e.to_string()),
            },
        };
        out.push(wt::SwitchReading {
            uri: uri.clone(),
            answer,
        });
    }
    out
}
