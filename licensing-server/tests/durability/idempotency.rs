//! A keyed write answered 2xx is durable with its kept answer: the server killed with SIGKILL
//! the moment after the answer, then started again, replays it and runs nothing (on sled and on
//! PostgreSQL); with two instances on one database, the same request sent to the second right
//! after the first answered is replayed, never refused as still running.

use serde_json::{Value, json};

use crate::child::{Api, ChildServer, Team, create_team_on};

/// Rounds of write, kill and retry per store.
const ROUNDS: usize = 3;

/// A `POST customers` with `Idempotency-Key: key`: status, body, and whether it was replayed.
async fn keyed_customer(api: &Api, key: &str, email: &str) -> (u16, Value, bool) {
    let response = api
        .client
        .post(api.dev("customers"))
        .bearer_auth(&api.team.api_key)
        .header("Idempotency-Key", key)
        .json(&json!({"email": email, "fullName": "Retried Customer"}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    let body = response.json().await.unwrap();
    (status, body, replayed)
}

/// How many customers have `email`.
async fn customers_with(api: &Api, email: &str) -> u64 {
    let page = api
        .get(&format!("customers?search={email}&pageSize=100"))
        .await;
    page["totalResults"].as_u64().unwrap()
}

async fn acknowledged_then_killed(url: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let team: Team = create_team_on(dir.path(), url);
    let env: Vec<(&str, &str)> = url
        .map(|u| vec![("LICENSING_DATABASE_URL", u)])
        .unwrap_or_default();
    let mut server = ChildServer::start(dir.path(), &env);
    for round in 0..ROUNDS {
        let key = format!("order-{round}-{}", uuid::Uuid::new_v4());
        let email = format!("retry-{round}-{}@example.com", &key[key.len() - 8..]);
        let api = Api::new(&server, &team);
        let (status, first, replayed) = keyed_customer(&api, &key, &email).await;
        assert_eq!(status, 201, "{first}");
        assert!(!replayed);
        // At once: no moment for anything written behind the answer.
        server.kill();
        server = server.start_again();
        let api = Api::new(&server, &team);
        let (status, again, replayed) = keyed_customer(&api, &key, &email).await;
        assert_eq!(
            (status, replayed),
            (201, true),
            "round {round}: the retry after the crash was not replayed: {again}"
        );
        assert_eq!(
            again, first,
            "round {round}: the same answer, byte for byte"
        );
        assert_eq!(
            customers_with(&api, &email).await,
            1,
            "round {round}: the retry created nothing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_write_answered_before_sigkill_is_replayed() {
    acknowledged_then_killed(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_write_answered_before_sigkill_is_replayed_on_postgres() {
    let Some(url) = licensing_server::testing::postgres::database().await else {
        eprintln!(
            "a_keyed_write_answered_before_sigkill_is_replayed_on_postgres: skipped, no PostgreSQL"
        );
        return;
    };
    acknowledged_then_killed(Some(&url)).await;
}

/// Two instances on one database: a retry through the second, sent the moment the first
/// answered, gets the kept answer (the store's tests show a claim whose instance died is free
/// at once: `a_claim_dies_with_its_instance`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_through_another_instance_is_replayed_at_once() {
    let Some(url) = licensing_server::testing::postgres::database().await else {
        eprintln!("a_retry_through_another_instance_is_replayed_at_once: skipped, no PostgreSQL");
        return;
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let team = create_team_on(dir_a.path(), Some(&url));
    let env = [("LICENSING_DATABASE_URL", url.as_str())];
    let a = ChildServer::start(dir_a.path(), &env);
    let b = ChildServer::start(dir_b.path(), &env);
    let (api_a, api_b) = (Api::new(&a, &team), Api::new(&b, &team));
    for round in 0..5 {
        let key = format!("two-instances-{round}-{}", uuid::Uuid::new_v4());
        let email = format!("two-{round}-{}@example.com", &key[key.len() - 8..]);
        let (status, first, _) = keyed_customer(&api_a, &key, &email).await;
        assert_eq!(status, 201, "{first}");
        let (status, again, replayed) = keyed_customer(&api_b, &key, &email).await;
        assert_eq!(
            (status, replayed),
            (201, true),
            "round {round}: the second instance did not replay: {again}"
        );
        assert_eq!(again, first);
        assert_eq!(customers_with(&api_b, &email).await, 1);
    }
}
