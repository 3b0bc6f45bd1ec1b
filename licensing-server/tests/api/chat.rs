//! `chatId` checked against a chat directory that the test runs on loopback.

use serde_json::{Value, json};
use warp::Filter;

use crate::helpers::TestServer;

const KNOWN: &str = "123456789012345678";
const TOKEN: &str = "test-bot-token";

/// A Discord-style directory: `GET /users/{id}` with `Authorization: Bot <token>`.
async fn directory() -> String {
    let users = warp::path!("users" / String)
        .and(warp::get())
        .and(warp::header::optional::<String>("authorization"))
        .map(|id: String, auth: Option<String>| {
            let status = if auth.as_deref() != Some(&format!("Bot {TOKEN}")) {
                401
            } else if id == KNOWN {
                200
            } else {
                404
            };
            let body = if status == 200 {
                json!({"id": id, "username": "jane", "avatar": "a1b2c3", "global_name": "Jane D."})
            } else {
                json!({"message": "Unknown User"})
            };
            warp::reply::with_status(
                warp::reply::json(&body),
                warp::http::StatusCode::from_u16(status).unwrap(),
            )
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(warp::serve(users).incoming(listener).run());
    format!("http://{addr}")
}

#[tokio::test]
async fn chat_ids_are_checked_and_fill_the_account() {
    let base = directory().await;
    let s = TestServer::start_with(|c| {
        c.chat_api_url = Some(base.clone());
        c.chat_bot_token = Some(TOKEN.into());
    })
    .await;
    let created = s
        .post(
            &s.dev("customers"),
            &format!(r#"{{"email":"jane@example.com","chatId":"{KNOWN}"}}"#),
        )
        .await;
    let account = created.ok()["chatAccount"].clone();
    assert_eq!(account["chatId"], KNOWN);
    assert_eq!(
        (
            account["username"].as_str(),
            account["avatar"].as_str(),
            account["globalName"].as_str()
        ),
        (Some("jane"), Some("a1b2c3"), Some("Jane D."))
    );
    assert_eq!(account["customerId"], created.ok()["id"]);

    let unknown = s
        .post(
            &s.dev("customers"),
            r#"{"email":"x@example.com","chatId":"99999999999999999"}"#,
        )
        .await;
    assert_eq!(unknown.err(400, "BAD_REQUEST").fields(), ["chatId"]);
    assert_eq!(
        unknown.body["result"]["details"],
        "chatId: no chat user has this id"
    );
    let id = created.ok()["id"].as_str().unwrap();
    let cleared = s
        .put(&s.dev(&format!("customers/{id}")), r#"{"chatId":null}"#)
        .await;
    assert_eq!(cleared.ok()["chatAccount"], Value::Null);
}

#[tokio::test]
async fn a_wrong_token_or_no_directory_is_a_clear_400() {
    let base = directory().await;
    let s = TestServer::start_with(|c| {
        c.chat_api_url = Some(base.clone());
        c.chat_bot_token = Some("wrong".into());
    })
    .await;
    let refused = s
        .post(
            &s.dev("customers"),
            &format!(r#"{{"email":"a@example.com","chatId":"{KNOWN}"}}"#),
        )
        .await;
    assert!(
        refused.err(400, "BAD_REQUEST").body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("bot token")
    );

    let plain = TestServer::start().await;
    let none = plain
        .post(
            &plain.dev("customers"),
            &format!(r#"{{"email":"a@example.com","chatId":"{KNOWN}"}}"#),
        )
        .await;
    assert!(
        none.err(400, "BAD_REQUEST").body["result"]["details"]
            .as_str()
            .unwrap()
            .contains("no chat directory")
    );
    assert_eq!(
        plain.get(&plain.dev("customers")).await.ok()["totalResults"],
        0,
        "nothing stored"
    );
}
