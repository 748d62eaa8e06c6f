"""API operations: documents that say everything the spec says, the spec's own verbs and
resources, ranking constants as settings, and hits an agent can cite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundkb import KnowledgeBase, Settings
from groundkb.analyze import lexicon
from groundkb.analyze.lexicon import english_verbs
from groundkb.analyze.text import stem
from groundkb.apinames import (
    change_verb,
    first_word,
    operation_fit,
    operation_kind,
    path_resources,
    resource_key,
    singular,
    split_words,
    verb_kind,
)
from groundkb.search.apis import ApiIndex, ApiWeights, operation_factor
from groundkb.serve.cli import cli
from groundkb.serve.schemas import search_out
from groundkb.store.base import DocSummary

from .conftest import FIXTURES, ROOT

OPS = FIXTURES / "openapi_ops"


@pytest.fixture
def kw(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase.open(tmp_path / "kb.db", Settings(embedder="none", retrieval="keyword"))
    yield kb
    kb.close()


@pytest.fixture(scope="module")
def openai_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """OpenAI's real spec (benchmarks/data/openapi), keyword search, ingested once."""
    folder = tmp_path_factory.mktemp("openai")
    with tarfile.open(ROOT / "benchmarks" / "data" / "openapi" / "specs.tar.xz") as archive:
        archive.extract("openai.yaml", folder, filter="data")
    settings = Settings(embedder="none", retrieval="keyword")
    with KnowledgeBase.open(folder / "kb.db", settings) as kb:
        assert kb.ingest(folder / "openai.yaml", source="openai").ok
        yield kb


# the kind boost alone: a factor of 1.5 says the question asks for the operation's action
KIND_ONLY = ApiWeights(kind_boost=0.5, resource=1.0, parent=1.0, superseded=1.0)


def test_one_singulariser_serves_the_index_and_the_api_names() -> None:
    for plural, one in [("statuses", "status"), ("aliases", "alias"), ("analyses", "analysis"),
                        ("policies", "policy"), ("sizes", "size"), ("metrics", "metric"),
                        ("caches", "cache"), ("people", "person"), ("boxes", "box")]:  # fmt: skip
        assert stem(plural) == singular(plural) == one
    for word in ("status", "alias", "news", "kubernetes", "ips", "analytics"):
        assert stem(word) == singular(word) == word
    assert resource_key("statuses") == "status"
    assert resource_key("PaymentIntents") == "payment_intent"


def test_an_operation_kept_in_a_file_of_its_own_is_read_whole(kw: KnowledgeBase) -> None:
    r = kw.ingest(OPS / "cloud", source="cloud")
    assert r.ok, r.errors
    assert r.inserted == 3
    doc = kw.get("cloud:POST /v2/servers")
    assert doc.title == "Create a New Server"
    assert doc.aliases == ("servers_create", "servers create")
    assert "Servers" in doc.keywords
    # the tag's description (itself a $ref) and the spec's code sample
    assert "Servers: Servers are virtual machines" in doc.content
    assert [e.description for e in doc.examples] == ["Example request", "cURL"]
    assert "Bearer $TOKEN" in doc.examples[1].code
    assert '{"name": "web-1", "size": "s-1vcpu-1gb"}' in doc.content  # the body example
    assert "- `name` (string, required): The human-readable name of the server." in doc.content
    action = kw.get("cloud:POST /v2/servers/{server_id}/actions")
    assert "- `server_id` (in path, integer, required)" in action.content  # param file's ref
    assert "One of: reboot, power_off, snapshot." in action.content


def test_the_card_comes_first_and_the_details_after(kw: KnowledgeBase) -> None:
    kw.ingest(OPS / "cloud", source="cloud")
    hit = kw.search("create a new server", limit=1).hits[0]
    assert hit.doc_id == "cloud:POST /v2/servers"
    assert hit.chunk_id.endswith("#0") and hit.header_path == "Create a New Server"
    assert "202 Accepted" not in hit.snippet  # the card holds the lead only
    field = kw.search("human-readable name of the server", limit=1).hits[0]
    assert field.doc_id == "cloud:POST /v2/servers"
    assert field.header_path == "Create a New Server > Details"


def test_remote_procedure_paths_name_their_family_and_method() -> None:
    assert path_resources("/chat.postMessage") == ["chat", "message"]
    assert path_resources("/users.lookupByEmail") == ["user"]
    assert path_resources("/admin.conversations.invite") == ["admin", "conversation"]
    assert operation_kind("POST", "/chat.postMessage") == "create"
    assert operation_kind("GET", "/conversations.list") == "list"
    assert operation_kind("GET", "/users.info") == "read"
    assert operation_kind("POST", "/conversations.kick") == "kick"
    # a group name before a version is still no resource
    assert path_resources("/apis/apps.k8s.io/v1/deployments") == ["deployment"]


def test_a_spec_action_hint_is_read_as_a_verb() -> None:
    assert verb_kind("deletecollection") == "delete"
    assert verb_kind("watchlist") == "watch"
    assert verb_kind("get") == "read" and verb_kind("patch") == "update"
    assert operation_kind("DELETE", "/api/v1/namespaces/{namespace}/pods", "deletecollection")
    assert operation_kind("GET", "/api/v1/watch/pods", "watchlist") == "watch"


def test_the_cached_name_helpers_hand_out_their_own_lists() -> None:
    # split_words is cached: a caller that changes its list must not change the next's
    words = split_words("listPaymentIntents")
    words[-1] = "changed"
    assert split_words("listPaymentIntents") == ["list", "payment", "intents"]
    assert resource_key("PaymentIntents") == resource_key("PaymentIntents") == "payment_intent"
    assert verb_kind(" Get ") == verb_kind("get") == "read"
    for text in ("Create a refund", "listPaymentIntents", "HTTPServer start", "__init__", ""):
        assert first_word(text) == (split_words(text) or [""])[0]


def test_the_specs_own_verbs_pick_the_operation(kw: KnowledgeBase) -> None:
    r = kw.ingest(OPS / "chat", source="chat")
    assert r.ok, r.errors
    top = kw.search("kick someone out of a channel", limit=3).hits[0]
    assert top.doc_id == "chat:POST /conversations.kick"
    assert kw.search("find a user by email", limit=1).hits[0].doc_id == (
        "chat:GET /users.lookupByEmail"
    )


def _summary(doc_id: str, title: str, kind: str, op_id: str) -> DocSummary:
    return DocSummary(doc_id, "s", "api", "", title, "", (), (op_id,), "", "", "", kind)


def test_the_actions_of_an_operation_come_from_its_summary_and_operation_id() -> None:
    docs = [
        _summary("c:POST /conversations.kick", "Removes a user from a conversation", "kick",
                 "conversations_kick"),
        _summary("c:POST /conversations.archive", "Removes a conversation from view",
                 "archive", "conversations_archive"),
        _summary("c:POST /pins.remove", "Removes a pin", "remove", "pins_remove"),
        _summary("c:POST /chat.delete", "Deletes a message", "delete", "chat_delete"),
    ]  # fmt: skip
    index = ApiIndex.build(docs)
    assert "remove" in index.verbs  # leads three summaries
    kick = index.actions["c:POST /conversations.kick"]
    assert {"kick", "remove", "delete"} <= kick
    assert "kick" in index.asked_actions(("kick", "someone", "out"))
    assert "delete" in index.asked_actions(("remove", "a", "message"))
    weights = ApiWeights(kind_boost=1.0, resource=1.0, parent=1.0, superseded=1.0)
    tokens = ("kick", "a", "user")
    assert operation_factor(tokens, docs[0], False, weights, index) == 2.0
    assert operation_factor(tokens, docs[3], False, weights, index) == 1.0


def test_the_ranking_constants_are_settings(kw: KnowledgeBase, tmp_path: Path) -> None:
    doc = _summary("s:POST /v1/refunds", "Create a refund", "create", "PostRefunds")
    index = ApiIndex.build([doc])
    plain = ApiWeights(kind_boost=0.0, resource=1.0, parent=1.0, superseded=1.0)
    named = ApiWeights(kind_boost=0.0, resource=3.0, parent=1.0, superseded=1.0)
    tokens = ("list", "refunds")
    assert operation_factor(tokens, doc, False, named, index) == pytest.approx(
        3 * operation_factor(tokens, doc, False, plain, index)
    )
    # "refund a payment": the first word names what the create makes
    boosted = ApiWeights(kind_boost=1.0, resource=1.0, parent=1.0, superseded=1.0)
    assert operation_factor(("refund", "a", "payment"), doc, False, boosted, index) == 2.0
    # ...when that word can be a verb: "daemonset status" asks to create no daemonset
    sets = _summary("k:POST /apis/apps/v1/daemonsets", "create a DaemonSet", "create", "")
    sets_index = ApiIndex.build([sets])
    assert operation_factor(("daemonset", "status"), sets, False, boosted, sets_index) == 1.0
    s = Settings().replace(api_resource_factor="1.5", api_kind_boost=2)
    assert (s.api_resource_factor, s.api_kind_boost) == (1.5, 2.0)


def test_hits_for_operations_carry_method_path_and_resource(kw: KnowledgeBase) -> None:
    kw.ingest(OPS / "cloud", source="cloud")
    kw.ingest(OPS / "chat", source="chat")
    result = kw.search("create a new server", limit=3)
    hit = result.hits[0]
    assert (hit.method, hit.path, hit.resource) == ("POST", "/v2/servers", "server")
    out = search_out(result).hits[0].model_dump()
    assert (out["method"], out["path"], out["resource"]) == ("POST", "/v2/servers", "server")
    printed = CliRunner().invoke(
        cli, ["--db", kw.settings.db, "search", "create a new server", "--mode", "keyword",
              "--limit", "3", "--json"]
    )  # fmt: skip
    assert printed.exit_code == 0, printed.output
    first = json.loads(printed.output)["hits"][0]
    assert (first["method"], first["path"], first["resource"]) == ("POST", "/v2/servers", "server")
    rpc = kw.search("lookup user by email", limit=1).hits[0]
    assert (rpc.method, rpc.path, rpc.resource) == ("GET", "/users.lookupByEmail", "user")


def test_an_operation_of_an_api_that_lacks_the_questions_resources_weighs_less() -> None:
    music = DocSummary("m:POST /playlists", "music", "api", "", "Create a playlist", "", (),
                       ("createPlaylist",), "", "", "", "create")  # fmt: skip
    chat = DocSummary("c:POST /channels", "chat", "api", "", "Create a channel", "", (),
                      ("createChannel",), "", "", "", "create")  # fmt: skip
    index = ApiIndex.build([music, chat])
    tokens = ("add", "a", "song", "to", "my", "playlist")
    assert index.missing_share(tokens, "music") == 0.0
    assert index.missing_share(tokens, "chat") == 1.0
    weights = ApiWeights(kind_boost=0.0, resource=1.0, parent=1.0, superseded=1.0, context=0.5)
    assert operation_factor(tokens, chat, False, weights, index) == 0.5
    assert operation_factor(tokens, music, False, weights, index) == 1.0
    # one API alone: nothing to compare, no factor
    assert ApiIndex.build([music]).missing_share(tokens, "chat") == 0.0


def test_a_request_for_a_change_is_told_from_a_question_about_state() -> None:
    asks = {
        "close an issue": "close",
        "how do I close an issue": "close",
        "please hide my email address": "hide",
        "can we stop following an artist": "stop",
        "get rid of a namespace": "get",  # a two-word verb that deletes
        "redeploy my app": "redeploy",
    }
    reads = [
        "list the users",
        "which podcasts have I saved",
        "is this podcast already in my library",
        "how many labels can one task have",
        "history of actions on a volume",  # a noun first: no verb to go by
        # nouns that are also a verb's other forms: a request names its verb's base form
        "details about an artist",
        "logs of my app",
        "invoices of a customer",
        "available API groups",
        "search messages",
        "look up a user by email",
        "download an invoice as PDF",
        "",
    ]
    for question, verb in asks.items():
        assert change_verb(question.split()) == verb, question
    for question in reads:
        assert change_verb(question.split()) == "", question


def test_a_read_weighs_less_when_the_question_asks_for_a_change() -> None:
    get = _summary("g:GET /repos/{repo}/issues", "List repository issues", "list", "issues/list")
    patch = _summary(
        "g:PATCH /repos/{repo}/issues/{n}", "Update an issue", "update", "issues/update"
    )
    index = ApiIndex.build([get, patch])
    weights = ApiWeights(kind_boost=0.0, resource=1.0, parent=1.0, superseded=1.0, read=0.5)
    close = ("close", "an", "issue")
    assert operation_factor(close, get, False, weights, index) == 0.5
    assert operation_factor(close, patch, False, weights, index) == 1.0
    which = ("which", "issues", "are", "open")
    assert operation_factor(which, get, False, weights, index) == 1.0
    # a first word that names a resource of the index is a noun here ("issue history")
    assert operation_factor(("issue", "history"), get, False, weights, index) == 1.0
    assert Settings().api_read_factor < 1.0


def test_a_question_for_all_of_a_resource_asks_for_no_single_one() -> None:
    one = _summary(
        "d:GET /v2/projects/{project_id}", "Retrieve an Existing Project", "read", "projects_get"
    )
    many = _summary("d:GET /v2/projects", "List All Projects", "list", "projects_list")
    index = ApiIndex.build([one, many])
    weights = KIND_ONLY
    everything = ("show", "all", "my", "projects")
    assert operation_factor(everything, many, False, weights, index) == 1.5
    assert operation_factor(everything, one, False, weights, index) == 1.0
    for question in (("show", "my", "project"), ("show", "a", "project")):
        assert operation_factor(question, one, False, weights, index) == 1.5, question
    # "show all my projects" reads many; one project is still what "get a project" asks
    assert operation_fit(everything, "/v2/projects", "list").many
    assert not operation_fit(("get", "a", "project"), "/v2/projects/{id}", "read").many


def test_a_question_for_one_item_asks_for_no_list() -> None:
    one = _summary(
        "s:GET /v1/refunds/{refund}", "Retrieve the details of a refund", "read", "GetRefund"
    )
    many = _summary("s:GET /v1/refunds", "Returns a list of refunds", "list", "GetRefunds")
    index = ApiIndex.build([one, many])
    weights = KIND_ONLY
    for question in (
        ("get", "refunds"),  # the operation's own words ("GetRefunds") ask for the list
        ("get", "a", "refund"),
    ):
        assert operation_factor(question, many, False, weights, index) == 1.5, question
    for question in (
        ("get", "one", "refund"),
        ("get", "a", "specific", "refund"),
        ("get", "a", "single", "particular", "refund"),
        ("get", "a", "refund", "by", "its", "id"),
        ("get", "the", "details", "of", "a", "refund"),
        ("show", "information", "about", "the", "refund"),
    ):
        assert operation_factor(question, many, False, weights, index) == 1.0, question
        assert operation_factor(question, one, False, weights, index) == 1.5, question
        assert operation_fit(question, "/v1/refunds", "list").one, question
    # "one" on an enclosing resource says nothing of the resource listed
    charge = _summary("s:GET /v1/charges/{charge}/refunds", "List refunds of a charge", "list",
                      "GetChargeRefunds")  # fmt: skip
    index = ApiIndex.build([one, many, charge])
    question = ("get", "the", "refunds", "of", "one", "charge")
    assert not operation_fit(question, "/v1/charges/{charge}/refunds", "list").one
    assert operation_factor(question, charge, False, weights, index) == 1.5
    # the details of all of them, or of several, are the list's
    for question in (
        ("details", "of", "all", "my", "refunds"),
        ("get", "the", "details", "of", "the", "refunds"),
    ):
        assert not operation_fit(question, "/v1/refunds", "list").one, question
    # "every" takes the singular and still asks for all of them
    every = ("show", "every", "refund")
    assert operation_fit(every, "/v1/refunds", "list").many
    assert operation_factor(every, one, False, weights, index) == 1.0


def test_where_the_object_goes_is_not_what_the_verb_asks_for() -> None:
    threads = _summary("o:POST /threads", "Create a thread.", "create", "createThread")
    messages = _summary(
        "o:POST /threads/{thread_id}/messages", "Create a message.", "create", "createMessage"
    )
    index = ApiIndex.build([threads, messages])
    weights = KIND_ONLY
    add = ("add", "a", "message", "to", "a", "thread")
    assert operation_factor(add, messages, False, weights, index) == 1.5
    assert operation_factor(add, threads, False, weights, index) == 1.0
    assert operation_fit(add, "/threads", "create").off_object
    # "with": what the new thing comes with
    new_thread = ("create", "a", "thread", "with", "an", "initial", "message")
    assert operation_factor(new_thread, threads, False, weights, index) == 1.5
    assert operation_factor(new_thread, messages, False, weights, index) == 1.0
    # what the object is part of still asks for it ("the base branch of a pull request"),
    # and so does the object's owner in a possessive
    for question in (
        ("update", "the", "metadata", "of", "a", "thread"),
        ("create", "a", "thread", "s", "message"),
    ):
        assert not operation_fit(question, "/threads", "create").off_object, question
    # the "object" names no resource when the first word is no verb ("which endpoint
    # creates from a thread" reads "creates" as its object): the rule does not apply
    which = ("which", "endpoint", "creates", "from", "a", "thread")
    assert operation_fit(which, "/threads", "create").off_object
    assert operation_factor(which, threads, False, weights, index) == 1.5


def test_one_of_a_resource_is_not_asked_of_the_operation_on_all_of_them() -> None:
    path = "k:DELETE /api/v1/namespaces/{namespace}/serviceaccounts"
    all_of_them = _summary(path, "delete collection of ServiceAccount", "delete",
                           "deleteCoreV1CollectionNamespacedServiceAccount")  # fmt: skip
    one = _summary(f"{path}/{{name}}", "delete a ServiceAccount", "delete",
                   "deleteCoreV1NamespacedServiceAccount")  # fmt: skip
    index = ApiIndex.build([all_of_them, one])
    assert index.collective == {all_of_them.id}
    weights = KIND_ONLY
    for question in (("delete", "service", "account"), ("delete", "a", "service", "account")):
        assert operation_factor(question, one, False, weights, index) == 1.5, question
        assert operation_factor(question, all_of_them, False, weights, index) == 1.0, question
    # named in the plural, or "all" of them: the operation on the collection is asked for
    for question in (("delete", "service", "accounts"), ("delete", "all", "service", "account")):
        assert operation_factor(question, all_of_them, False, weights, index) == 1.5, question
    # one thing with parts of its own is no collection: the registry's config and a
    # subject's config
    config = "d:PUT /v2/databases/{id}/schema-registry/config"
    whole = _summary(config, "Update Schema Registry Configuration", "update", "update_config")
    part = _summary(f"{config}/{{subject}}", "Update a Subject's Configuration", "update",
                    "update_subject_config")  # fmt: skip
    assert not ApiIndex.build([whole, part]).collective
    # an API without the operation on one item: its operation on the collection is the one
    alone = ApiIndex.build([all_of_them])
    assert not alone.collective
    question = ("delete", "service", "account")
    assert operation_factor(question, all_of_them, False, weights, alone) == 1.5


def test_one_service_account_asked_for_finds_the_operation_on_one(
    kw: KnowledgeBase, tmp_path: Path
) -> None:
    """Kubernetes' shape: the same delete on the collection and on one item, the item's
    operation the longer (on its words alone the collection's ranks first)."""
    ops = "/api/v1/namespaces/{namespace}/serviceaccounts"
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "Cluster", "version": "1"},
        "paths": {
            ops: {"delete": {"operationId": "deleteCollectionNamespacedServiceAccount",
                             "summary": "delete collection of ServiceAccount"}},
            f"{ops}/{{name}}": {"delete": {"operationId": "deleteNamespacedServiceAccount",
                                          "summary": "delete a ServiceAccount",
                                          "description": "The object is removed after"
                                          " its grace period; its dependents follow as the"
                                          " propagation policy says."}},
        },
    }  # fmt: skip
    (tmp_path / "cluster.json").write_text(json.dumps(spec))
    assert kw.ingest(tmp_path / "cluster.json", source="cluster").ok
    one = kw.search("delete service account")
    assert one.hits[0].doc_id == f"cluster:DELETE {ops}/{{name}}"
    # asked for all of them, the operation on the collection is asked for as before
    every = kw.search("delete all service accounts")
    scores = {h.doc_id: h.score for h in every.hits}
    assert scores[f"cluster:DELETE {ops}"] >= 0.9 * scores[f"cluster:DELETE {ops}/{{name}}"]


def test_saying_one_item_moves_the_ranking_toward_its_read(
    kw: KnowledgeBase, tmp_path: Path
) -> None:
    """Stripe's shape: the list's operationId says "Get" as the read of one's does. Words
    that mark one item widen the read's lead over the list (the question otherwise the
    same)."""
    ok = {"200": {"description": "ok"}}
    paths: dict[str, Any] = {
        "/refunds": {"get": {"operationId": "GetRefunds", "responses": ok,
                             "summary": "Returns a list of refunds"}},
        "/refunds/{refund}": {"get": {"operationId": "GetRefundsRefund", "responses": ok,
                                      "summary": "Retrieves the details of an existing refund"}},
    }  # fmt: skip
    for name in ("customer", "invoice", "user", "product", "coupon", "payout"):
        paths[f"/{name}s"] = {"get": {"operationId": f"Get{name.title()}s", "responses": ok,
                                      "summary": f"Returns a list of {name}s"}}  # fmt: skip
    spec = {"openapi": "3.0.0", "info": {"title": "Shop", "version": "1"}, "paths": paths}
    (tmp_path / "shop.json").write_text(json.dumps(spec))
    assert kw.ingest(tmp_path / "shop.json", source="shop").ok

    def lead(question: str) -> float:
        scores = {h.path: h.score for h in kw.search(question, limit=5).hits}
        return scores["/refunds/{refund}"] / scores["/refunds"]

    plain = lead("get a refund")
    for question in ("get one refund", "get a specific refund", "get a refund by its id"):
        assert lead(question) > 1.1 * plain, question


def test_where_the_verbs_object_goes_picks_the_operation(openai_kb: KnowledgeBase) -> None:
    """OpenAI's spec: a message added to a thread is created under the thread, not as
    one; a thread created with a message is a thread."""
    first = {
        q: openai_kb.search(q, limit=1).hits[0].path
        for q in ("add a message to a thread", "create a thread with an initial message")
    }
    assert first == {
        "add a message to a thread": "/threads/{thread_id}/messages",
        "create a thread with an initial message": "/threads",
    }


def test_an_operation_the_api_does_not_have_is_a_near_miss_not_an_answer(
    openai_kb: KnowledgeBase,
) -> None:
    """OpenAI's spec pauses fine-tuning jobs and cancels batches; it neither pauses
    batches nor deletes audit logs, and cancels a vector store's file batches but not
    the store. Its nearest operations rank first and are offered, not answered from; the
    operations it has are answered."""
    kb = openai_kb
    paused = kb.search("pause a batch", limit=3)
    assert paused.hits[0].path == "/fine_tuning/jobs/{fine_tuning_job_id}/pause"
    assert (paused.verdict.kind, paused.verdict.reason) == ("clarify", "near_miss")
    assert paused.verdict.options[0].doc_id == paused.hits[0].doc_id
    assert "batch" in paused.verdict.message
    # the spec's summary is "Pause a fine-tune job." (the title drops the full stop)
    assert paused.hits[0].title == "Pause a fine-tune job"
    assert paused.verdict.options[0].label == "Pause a fine-tune job (Fine-tuning)"
    assert "Pause a fine-tune job (Fine-tuning), but" in paused.verdict.message
    deleted = kb.search("delete an audit log", limit=3)
    assert deleted.hits[0].path == "/organization/audit_logs"
    assert (deleted.verdict.kind, deleted.verdict.reason) == ("clarify", "near_miss")
    assert "does a list" in deleted.verdict.message
    # OpenAI cancels a vector store's file batches, not vector stores
    held = kb.search("cancel a vector store", limit=3)
    assert held.hits[0].path.endswith("/file_batches/{batch_id}/cancel")
    assert (held.verdict.kind, held.verdict.reason) == ("clarify", "near_miss")
    assert "file batch of a vector store" in held.verdict.message
    for question, path in (
        ("pause a fine-tuning job", "/fine_tuning/jobs/{fine_tuning_job_id}/pause"),
        ("cancel a batch", "/batches/{batch_id}/cancel"),
        (
            "cancel a file batch of a vector store",
            "/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel",
        ),
        ("list the files of a vector store", "/vector_stores/{vector_store_id}/files"),
    ):
        r = kb.search(question, limit=3)
        assert (r.verdict.kind, r.hits[0].path) == ("answer", path), question


def test_an_operation_that_acts_on_another_thing_is_a_near_miss(
    kw: KnowledgeBase, tmp_path: Path
) -> None:
    """GitHub's and Slack's shapes: the API deletes workflow *runs*, releases
    subscription *schedules* and pins items *to* a channel, never the workflow, the
    subscription or the channel; the operation that does the verb names the thing asked
    for but acts on another, so it is offered, not answered from. The operations that
    act on what is asked are answered."""
    ok = {"200": {"description": "ok"}}

    def op(op_id: str, summary: str) -> dict[str, Any]:
        return {"operationId": op_id, "summary": summary, "responses": ok}

    flows = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}"
    paths: dict[str, Any] = {
        "/repos/{owner}/{repo}/actions/runs/{run_id}": {
            "delete": op("actions/delete-workflow-run", "Delete a workflow run")},
        flows: {"get": op("actions/get-workflow", "Get a workflow")},
        f"{flows}/disable": {"put": op("actions/disable-workflow", "Disable a workflow")},
        "/subscriptions/{subscription}": {
            "get": op("GetSubscription", "Retrieve a subscription")},
        "/subscription_schedules/{schedule}/release": {
            "post": op("PostSubscriptionSchedulesScheduleRelease", "Release a schedule")},
        "/pins.add": {"post": op("pins_add", "Pins an item to a channel.")},
        "/conversations.archive": {
            "post": op("conversations_archive", "Archives a conversation.")},
        "/clusters/{cluster_id}": {"get": op("get_cluster", "Retrieve a cluster")},
        "/clusters/{cluster_id}/node_pools/{node_pool_id}/recycle": {
            "post": op("recycle_node_pool", "Recycle a node pool")},
        "/dnd.setSnooze": {"post": op("dnd_setSnooze", "Turns on Do Not Disturb mode.")},
        "/pulls/{pull_number}": {"get": op("pulls/get", "Get a pull request")},
        "/pulls/{pull_number}/reviews": {
            "post": op("pulls/create-review", "Create a review for a pull request")},
    }  # fmt: skip
    spec = {"openapi": "3.0.0", "info": {"title": "Hub", "version": "1"}, "paths": paths}
    (tmp_path / "hub.json").write_text(json.dumps(spec))
    assert kw.ingest(tmp_path / "hub.json", source="hub").ok
    for question, acts_on in (
        ("delete a workflow", "the workflow run, not on the workflow"),
        ("release a subscription", "the schedule, not on the subscription"),
        ("pin a channel", "the item, not on the channel"),
        # the title's verb, though no other title leads with it
        ("recycle a cluster", "the node pool, not on the cluster"),
    ):
        r = kw.search(question, limit=3)
        assert (r.verdict.kind, r.verdict.reason) == ("clarify", "near_miss"), question
        assert f"it acts on {acts_on}" in r.verdict.message, question
    for question, path in (
        ("delete a workflow run", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
        ("release a subscription schedule", "/subscription_schedules/{schedule}/release"),
        ("pin an item to a channel", "/pins.add"),
        # "on" makes the verb phrasal: "disturb" is no object of "turn"
        ("turn on do not disturb", "/dnd.setSnooze"),
        # the operation makes what the verb names: a review, for the pull request
        ("review a pull request", "/pulls/{pull_number}/reviews"),
    ):
        r = kw.search(question, limit=3)
        assert (r.verdict.kind, r.hits[0].path) == ("answer", path), question


def _forget_lexicon() -> None:
    lexicon.forget()


def test_a_warm_up_loads_the_lexicon_for_verb_forms_typos_or_operations(
    tmp_path: Path,
) -> None:
    assert {"close", "hide", "redeploy"} <= english_verbs()
    assert not {"history", "kubernetes"} & english_verbs()
    _forget_lexicon()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\nNo operations here.\n")
    try:
        off_settings = Settings(embedder="none", verb_forms=False, typo_correction=False)
        with KnowledgeBase.open(tmp_path / "off.db", settings=off_settings) as off:
            off.ingest(tmp_path / "docs", source="docs")
            off.warm()
            assert lexicon._verbs.cache_info().currsize == 0
            off.ingest(OPS / "cloud", source="cloud")  # API questions need the verbs
            off.warm()
            assert lexicon._verbs.cache_info().currsize == 1
        _forget_lexicon()
        with KnowledgeBase.open(tmp_path / "on.db", settings=Settings(embedder="none")) as on:
            on.ingest(tmp_path / "docs", source="docs")
            on.warm()  # the verb forms of every query, the English words of typos
            assert lexicon._verbs.cache_info().currsize == 1
            assert lexicon.english_words.cache_info().currsize == 1
        _forget_lexicon()
        typos = Settings(embedder="none", verb_forms=False)
        with KnowledgeBase.open(tmp_path / "typos.db", settings=typos) as kb:
            kb.warm()  # typo correction alone needs the English words
            assert lexicon.english_words.cache_info().currsize == 1
    finally:
        _forget_lexicon()


def test_without_the_lexicon_no_question_counts_as_a_request_for_a_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _forget_lexicon()
    monkeypatch.setattr(lexicon.importlib.util, "find_spec", lambda name: None)
    try:
        assert english_verbs() == frozenset()
        assert change_verb(["close", "an", "issue"]) == ""
        # the create rule keeps its old reading: "refund a payment" still asks to create
        doc = _summary("s:POST /v1/refunds", "Create a refund", "create", "PostRefunds")
        boosted = ApiWeights(kind_boost=1.0, resource=1.0, parent=1.0, superseded=1.0)
        tokens = ("refund", "a", "payment")
        assert operation_factor(tokens, doc, False, boosted, ApiIndex.build([doc])) == 2.0
    finally:
        _forget_lexicon()


def test_close_an_issue_finds_the_update_and_which_issues_are_closed_the_list(
    tmp_path: Path,
) -> None:
    repo = {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}}
    state = {"type": "string", "enum": ["open", "closed"], "description": "open or closed"}
    spec = {"openapi": "3.0.0", "info": {"title": "Tracker", "version": "1"}, "paths": {
        "/repos/{repo}/issues": {"get": {
            "operationId": "issues/list-for-repo", "summary": "List repository issues",
            "description": "List the issues of a repository, open or closed.",
            "parameters": [repo, {"name": "state", "in": "query", "schema": state}],
            "responses": {"200": {"description": "ok"}}}},
        "/repos/{repo}/issues/{number}": {"patch": {
            "operationId": "issues/update", "summary": "Update an issue",
            "description": "Change the title, body or state of an issue.",
            "parameters": [repo, {"name": "number", "in": "path", "required": True,
                                  "schema": {"type": "integer"}}],
            "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {"state": state}}}}},
            "responses": {"200": {"description": "ok"}}}}}}  # fmt: skip
    (tmp_path / "tracker.json").write_text(json.dumps(spec))
    first: dict[float, list[str]] = {}
    for factor in (1.0, Settings().api_read_factor):
        settings = Settings(embedder="none", retrieval="keyword", api_read_factor=factor)
        with KnowledgeBase.open(tmp_path / f"kb-{factor}.db", settings) as kb:
            assert kb.ingest(tmp_path / "tracker.json", source="tracker").ok
            first[factor] = [
                kb.search(q, limit=2).hits[0].path
                for q in ("close an issue", "which issues are closed")
            ]
    assert first[1.0] == ["/repos/{repo}/issues", "/repos/{repo}/issues"]  # the rule off
    assert first[Settings().api_read_factor] == [
        "/repos/{repo}/issues/{number}", "/repos/{repo}/issues"]  # fmt: skip


def test_operations_on_named_resources_come_in_the_same_order_in_every_process() -> None:
    """Names of equal length are taken in a fixed order, not a set's: with a limit, which
    operations join the candidates must not depend on the process's hash seed."""
    program = (
        "from groundkb.search.apis import ApiIndex\n"
        "from groundkb.store.base import DocSummary\n"
        "docs = [DocSummary(f's:DELETE /{r}/{{sid}}', 's', 'api', '', r, '', (), (), '', '',"
        " '', 'delete') for r in ('services', 'accounts', 'domains', 'records')]\n"
        "index = ApiIndex.build(docs)\n"
        "tokens = ('delete', 'service', 'account', 'domain', 'record')\n"
        "print([d.id for d in index.named_by(tokens, 2)])\n"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert len(seen) == 1, seen
    assert seen.pop().strip() == "['s:DELETE /accounts/{sid}', 's:DELETE /services/{sid}']"


def test_an_operation_under_the_resource_a_question_acts_on_is_not_what_it_asks() -> None:
    customers = _summary("b:POST /v1/customers", "Creates a new customer object", "create",
                         "PostCustomers")  # fmt: skip
    subscriptions = _summary(
        "b:POST /v1/customers/{customer}/subscriptions",
        "Creates a new subscription on an existing customer",
        "create",
        "PostCustomersCustomerSubscriptions",
    )
    index = ApiIndex.build([customers, subscriptions])
    weights = KIND_ONLY
    create = ("create", "a", "customer")
    assert operation_factor(create, customers, False, weights, index) == 1.5
    # it creates too (its kind and its summary's verb), but creates a subscription
    assert operation_factor(create, subscriptions, False, weights, index) == 1.0
    # the same verb with the subscription as its object asks for it
    subscribe = ("create", "a", "subscription", "for", "a", "customer")
    assert operation_factor(subscribe, subscriptions, False, weights, index) == 1.5


def test_which_endpoint_asks_the_same_as_the_request_alone(kw: KnowledgeBase) -> None:
    assert kw.ingest(OPS / "billing", source="billing").ok
    for request, framed, want in [
        ("create a customer", "which endpoint creates a customer", "POST /v1/customers"),
        ("refund a payment", "which endpoint refunds a payment", "POST /v1/refunds"),
        ("list refunds", "what endpoints can I use to list refunds", "GET /v1/refunds"),
        ("create a customer", "what API call lets me create a customer", "POST /v1/customers"),
        ("create a customer", "endpoint to create a customer", "POST /v1/customers"),
        ("refund a payment", "the API that refunds a payment", "POST /v1/refunds"),
    ]:
        plain, asked = kw.search(request, limit=3), kw.search(framed, limit=3)
        assert asked.hits[0].doc_id == f"billing:{want}", framed
        assert [h.doc_id for h in asked.hits] == [h.doc_id for h in plain.hits], framed
        assert asked.verdict.kind == plain.verdict.kind == "answer", framed
    # "endpoint" in the spec's own names is still found by it
    top = kw.search("list webhook endpoints", limit=1).hits[0]
    assert top.doc_id == "billing:GET /v1/webhook_endpoints"
