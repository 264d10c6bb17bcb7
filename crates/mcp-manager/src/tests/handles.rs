//! Server handles: bound to one connection, refused once it is replaced, and keeping the idle clock.

use std::time::Duration;

use mcp_proto::types::CallToolRequestParams;
use mcp_transport::CallOptions;
use tokio::time::Instant;

use super::support::*;
use crate::{HandleError, IdlePolicy, ManagerOptions, ReconnectPolicy, ServerStatus};

fn idle_on() -> ManagerOptions {
    ManagerOptions {
        idle: IdlePolicy::on(),
        ..ManagerOptions::default()
    }
}

fn long_call() -> (CallToolRequestParams, CallOptions) {
    (
        CallToolRequestParams::new("tool_0000", None),
        CallOptions::default().timeout(Some(Duration::from_secs(3600))),
    )
}

#[tokio::test(start_paused = true)]
async fn a_long_call_through_a_handle_keeps_the_idle_policy_away_and_idle_counts_from_its_end() {
    let fake = Fake::new();
    fake.script(
        "remote",
        Script {
            call_delay: Duration::from_secs(40 * 60),
            ..Script::default()
        },
    );
    let manager = manager(&fake, idle_on());
    let started = Instant::now();
    manager.connect_servers([http("remote")]).await;
    let server = manager
        .server("remote")
        .expect("a ready server has a handle");
    let call = tokio::spawn(async move {
        let (params, options) = long_call();
        server.call_tool_with(&params, options).await
    });

    // Eight idle periods of an HTTP server (5 min) pass while the call runs.
    tokio::time::sleep(Duration::from_secs(39 * 60)).await;
    assert_eq!(manager.status("remote"), Some(ServerStatus::Ready));
    assert_eq!(fake.stats("remote").closed_by_client, 0);
    let result = call.await.unwrap().expect("the call is answered");
    assert!(!result.failed());
    assert_eq!(started.elapsed(), Duration::from_secs(40 * 60));

    // The idle period starts when the answer came.
    until(&manager, "remote", |s| *s == ServerStatus::Idle).await;
    assert_eq!(started.elapsed(), Duration::from_secs(45 * 60));
    assert_eq!(fake.stats("remote").closed_by_client, 1);
}

#[tokio::test(start_paused = true)]
async fn requests_through_a_handle_restart_the_idle_period() {
    let fake = Fake::new();
    let manager = manager(&fake, idle_on());
    let started = Instant::now();
    manager.connect_servers([http("remote")]).await;
    let server = manager.server("remote").unwrap();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(4 * 60)).await;
        server.ping().await.expect("the server is still connected");
    }
    until(&manager, "remote", |s| *s == ServerStatus::Idle).await;
    assert_eq!(started.elapsed(), Duration::from_secs(17 * 60));
    // The idle timeout ended that connection: the handle says so.
    let refused = server.ping().await.unwrap_err();
    assert!(refused.is_stale(), "{refused:?}");
}

#[tokio::test(start_paused = true)]
async fn a_handle_from_before_a_reconnect_is_refused_and_a_fresh_one_works() {
    let fake = Fake::new();
    let options = ManagerOptions {
        reconnect: ReconnectPolicy::on(),
        ..ManagerOptions::default()
    };
    let manager = manager(&fake, options);
    manager.connect_servers([stdio("a")]).await;
    let old = manager.server("a").unwrap();
    assert!(old.is_current());
    old.ping().await.expect("the first connection answers");

    fake.control("a", Control::Close);
    fake.until_stats("a", |s| s.connects == 2).await;
    until_ready(&manager, "a").await;

    assert!(!old.is_current());
    let refused = old.call_tool("tool_0000", None).await.unwrap_err();
    assert_eq!(refused.code(), "stale_handle");
    assert!(refused.request_error().is_none());
    assert!(
        matches!(&refused, HandleError::Stale { id } if id == "a"),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        "the handle to server `a` is stale: its connection was replaced or closed"
    );

    let fresh = manager.server("a").unwrap();
    assert!(fresh.is_current());
    let result = fresh.call_tool("tool_0000", None).await.expect("answered");
    assert!(!result.failed());
}

#[tokio::test(start_paused = true)]
async fn a_new_session_within_the_same_generation_makes_old_handles_stale() {
    // An expired Streamable HTTP session is initialized again by the same
    // task, under the same configuration generation: only the connection
    // tells the handles apart.
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([http("api")]).await;
    let generation = manager.generation("api");
    let old = manager.server("api").unwrap();
    fake.control("api", Control::Expire);
    fake.until_stats("api", |s| s.connects == 2).await;
    until_ready(&manager, "api").await;
    assert_eq!(manager.generation("api"), generation);

    let refused = old.ping().await.unwrap_err();
    assert_eq!(refused.code(), "stale_handle");
    manager
        .server("api")
        .unwrap()
        .ping()
        .await
        .expect("the new session answers");
}

#[tokio::test(start_paused = true)]
async fn handles_are_refused_after_disconnect_and_close_and_wait_ready_hands_out_current_ones() {
    let fake = Fake::new();
    let manager = manager(&fake, ManagerOptions::default());
    manager.connect_servers([stdio("a"), stdio("b")]).await;
    let a = manager.server("a").unwrap();
    manager.disconnect("a").await.unwrap();
    assert!(a.ping().await.unwrap_err().is_stale());
    assert!(manager.server("a").is_none());

    manager.retry("a").unwrap();
    let connected = manager
        .wait_ready("a", Instant::now() + Duration::from_secs(10))
        .await
        .unwrap();
    connected.server.ping().await.expect("a fresh handle works");
    assert_eq!(connected.server.id(), "a");

    let b = manager.server("b").unwrap();
    manager.close().await;
    assert!(connected.server.ping().await.unwrap_err().is_stale());
    assert!(b.ping().await.unwrap_err().is_stale());
}
