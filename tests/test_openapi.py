from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from groundkb import KnowledgeBase
from groundkb.apigraph import APIGraph
from groundkb.apinames import (
    asked_kinds,
    collection_segments,
    noun_forms,
    operation_fit,
    operation_kind,
    operation_kinds,
    path_resources,
    resource_key,
    singular,
)
from groundkb.ingest import loader_for
from groundkb.ingest.validate import validate_store
from groundkb.models import Document
from groundkb.search.apis import ApiIndex, near_miss, version_family, version_rank
from groundkb.store.base import DocSummary

from .conftest import FIXTURES, SHARED

SPECS = FIXTURES / "openapi"
BAD = FIXTURES / "openapi_bad"
CORPORA = SHARED / "corpora" / "openapi"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def _api_docs(kb: KnowledgeBase, source: str | None = None) -> list[Document]:
    return [kb.get(d.id) for d in kb.list_documents(type="api", source=source, limit=10_000)]


def _copy_specs(tmp_path: Path) -> Path:
    dest = tmp_path / "specs"
    shutil.copytree(SPECS, dest)
    return dest


# --------------------------------------------------------------------------- loading


def test_swagger2_yaml_gives_one_document_per_operation(kb: KnowledgeBase) -> None:
    r = kb.ingest(SPECS / "petstore.yaml", source="pets")
    assert r.ok, r.errors
    assert r.inserted == 6
    doc = kb.get("petstore:POST /pets")
    assert doc.type == "api" and doc.title == "Add a pet to the store" and doc.category == "pets"
    meta = doc.metadata
    assert (meta["method"], meta["path"], meta["operation_id"]) == ("POST", "/pets", "addPet")
    assert meta["operation_kind"] == "create" and meta["resources"] == ["pet"]
    assert meta["request_fields"] == ["name", "tag", "category", "category.id", "category.label"]
    assert "- `name` (string, required): The pet's name." in doc.content
    assert "- `category.id` (integer<int64>, required)" in doc.content
    assert doc.examples[0].code.startswith("curl -X POST 'https://petstore.example.com/v2/pets'")
    listing = kb.get("petstore:GET /pets")
    assert "- `status` (in query, string, required): Only pets with this status." in listing.content
    assert listing.metadata["parameters"] == ["limit", "status"]
    assert listing.examples[0].code.endswith("/v2/pets?status=<string>'")
    upload = kb.get("petstore:POST /pets/{petId}/photos").metadata
    assert upload["request_fields"] == ["file", "caption"]
    assert kb.get("petstore:POST /pets/{petId}/adopt").metadata["operation_kind"] == "adopt"
    # No summary: the short description is the title, and has_summary says so.
    deleted = kb.get("petstore:DELETE /pets/{petId}")
    assert deleted.title == "Deletes a pet" and deleted.metadata["has_summary"] is False


def test_openapi_31_json_operations_carry_the_graph_facts(kb: KnowledgeBase) -> None:
    r = kb.ingest(SPECS / "billing.json", source="billing")
    assert r.ok, r.errors
    assert r.inserted == 10  # webhooks are not operations
    kinds = {
        (d.metadata["method"], d.metadata["path"]): d.metadata["operation_kind"]
        for d in _api_docs(kb)
    }
    assert kinds == {
        ("GET", "/v1/customers"): "list",
        ("POST", "/v1/customers"): "create",
        ("GET", "/v1/customers/{customer}"): "read",
        ("POST", "/v1/customers/{customer}"): "update",
        ("DELETE", "/v1/customers/{customer}"): "delete",
        ("GET", "/v1/customers/search"): "search",
        ("GET", "/v1/customers/{customer}/sources"): "list",
        ("POST", "/v1/customers/{customer}/sources"): "create",
        ("POST", "/v1/charges/{charge}/capture"): "capture",
        ("GET", "/v1/charges"): "list",
    }
    sources = kb.get("billing:POST /v1/customers/{customer}/sources")
    assert sources.metadata["resources"] == ["customer", "source"]
    create = kb.get("billing:POST /v1/customers")
    assert "- `name` (string | null)" in create.content
    assert "- `email` (string, required): The customer's `email` address." in create.content
    assert create.metadata["request_fields"] == [
        "email", "name", "address", "address.city", "address.country"
    ]  # fmt: skip
    assert "-d 'email=<string>'" in create.examples[0].code
    listing = kb.get("billing:GET /v1/customers").metadata
    assert listing["response_fields"][:3] == ["data", "data[].id", "data[].email"]
    capture = kb.get("billing:POST /v1/charges/{charge}/capture")
    # HTML descriptions become text; a short first sentence stands in for a summary.
    assert capture.title == "Capture the payment of an existing, uncaptured charge"
    assert "<p>" not in capture.content and "expire after 7 days" in capture.content
    # Neither summary nor description: the title says what the method and path do.
    charges = kb.get("billing:GET /v1/charges")
    assert charges.title == "List charges" and "list charges" in charges.keywords
    assert "billing:GET /v1/customers/{customer}" in create.related_ids


def test_split_spec_resolves_relative_refs_and_claims_its_fragments(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    specs = _copy_specs(tmp_path)
    r = kb.ingest(specs / "split", source="shop")
    assert r.ok, r.errors  # the fragment files yield no entry errors
    assert r.files == 5 and r.inserted == 6
    assert kb.sources()[0].source.kind == "openapi"
    ids = {d.id for d in kb.list_documents()}
    assert ids == {
        "shop-api:GET /v1/orders",
        "shop-api:POST /v1/orders",
        "shop-api:GET /v1/orders/{orderId}",
        "shop-api:PATCH /v1/orders/{orderId}",
        "shop-api:POST /v1/orders/{orderId}/cancel",
        "shop-api:GET /v1/categories",
    }
    create = kb.get("shop-api:POST /v1/orders")
    # paths/orders.yaml refers to ../schemas/order.yaml, which refers to customer.yaml
    assert "customer.email" in create.metadata["request_fields"]
    assert "- `items[].sku` (string, required): Stock keeping unit." in create.content
    # Order -> Customer -> orders: [Order] is a cycle across files; it stops, marked.
    assert "- `customer.orders` (array<order> (recursive))" in create.content
    patch = kb.get("shop-api:PATCH /v1/orders/{orderId}").metadata
    assert patch["request_fields"] == ["note", "shipping", "shipping.address", "shipping.express"]
    assert kb.get("shop-api:GET /v1/categories").metadata["response_fields"] == [
        "name", "parent", "children"
    ]  # fmt: skip
    assert create.metadata["server"] == "https://eu.shop.example.com/api"

    again = kb.ingest(specs / "split", source="shop")
    assert (again.inserted, again.updated, again.unchanged, again.deleted) == (0, 0, 6, 0)

    # A change in a fragment re-ingests the spec that refers to it.
    customer = specs / "split" / "schemas" / "customer.yaml"
    customer.write_text(customer.read_text().replace("  name:\n", "  nickname:\n"))
    changed = kb.ingest(specs / "split", source="shop")
    assert changed.ok and changed.updated >= 2
    assert "customer.nickname" in kb.get("shop-api:POST /v1/orders").metadata["request_fields"]


def test_a_folder_of_specs_ingests_each_and_reingest_is_unchanged(kb: KnowledgeBase) -> None:
    first = kb.ingest(SPECS, source="apis")
    assert first.ok, first.errors
    assert first.inserted == 22
    second = kb.ingest(SPECS, source="apis")
    assert (second.inserted, second.updated, second.unchanged, second.deleted) == (0, 0, 22, 0)
    assert second.ok


def test_malformed_specs_name_the_file_and_the_line_or_pointer(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    r = kb.ingest(BAD / "malformed.json", source="bad")
    assert [str(e) for e in r.errors] == [
        "malformed.json: invalid JSON at line 5, column 42: "
        "Expecting property name enclosed in double quotes"
    ]
    (tmp_path / "old.json").write_text('{"swagger": "1.2", "paths": {}}')
    (tmp_path / "paths.yaml").write_text("openapi: 3.0.0\ninfo: {title: x}\npaths: [1, 2]\n")
    (tmp_path / "indent.yaml").write_text("openapi: 3.0.0\npaths:\n  /a:\n   get: {\n")
    r = kb.ingest(tmp_path, source="bad2")
    messages = sorted(str(e) for e in r.errors)
    assert messages[0].startswith("indent.yaml: invalid YAML at line")
    assert messages[1] == "old.json [/swagger]: unsupported Swagger version '1.2'; expected 2.0"
    assert messages[2] == "paths.yaml [/paths]: must be an object mapping paths to path items"
    assert r.inserted == 0


def test_a_broken_operation_is_skipped_and_the_rest_ingested(kb: KnowledgeBase) -> None:
    r = kb.ingest(BAD / "partly_broken.yaml", source="bad")
    messages = [str(e) for e in r.errors]
    assert (
        "partly_broken.yaml [/paths/~1widgets/post]: operation skipped: "
        "an operation must be an object"
    ) in messages
    assert (
        "partly_broken.yaml [/paths/~1widgets~1{id}/delete]: operation skipped: "
        "'parameters' must be a list"
    ) in messages
    assert any(
        m.startswith("partly_broken.yaml [/paths/~1widgets/get]: unresolvable $ref "
                     "'#/components/schemas/Missing'")
        for m in messages
    )  # fmt: skip
    assert any(
        "unresolvable $ref 'other.yaml#/Id': file other.yaml not found" in m for m in messages
    )
    assert len(messages) == 4
    assert sorted(d.id for d in kb.list_documents()) == [
        "partly_broken:GET /widgets",
        "partly_broken:GET /widgets/{id}",
    ]


def test_structured_files_are_dispatched_by_content(tmp_path: Path) -> None:
    spec = b'{"info": {}, "openapi": "3.1.0", "paths": {}}'
    entry = b'{"id": "a", "type": "guide", "meta": {"note": "mentions \\"openapi\\": \\"3\\""}}'
    assert loader_for("x.json", spec).name == "openapi"  # type: ignore[union-attr]
    assert loader_for("x.yaml", b"swagger: '2.0'\n").name == "openapi"  # type: ignore[union-attr]
    assert loader_for("x.json", entry).name == "entries"  # type: ignore[union-attr]
    assert loader_for("x.yaml", b"entries:\n  - openapi: 3\n").name == "entries"  # type: ignore[union-attr]
    assert loader_for("x.yaml", b"commands:\n  - name: a\n").name == "catalog"  # type: ignore[union-attr]
    assert loader_for("x.json", entry, forced="openapi").name == "openapi"  # type: ignore[union-attr]


def test_a_nested_openapi_key_is_still_an_entry(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text(
        '{"id": "e1", "type": "guide", "title": "Spec versions", "category": "c",'
        ' "content": "Which version?", "extra": {"openapi": "3.0.0"}}'
    )
    r = kb.ingest(tmp_path, source="e")
    assert r.ok and kb.get("e1").type == "guide"


def test_an_operation_ids_verb_stays_in_its_alias_where_it_is_an_http_method(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """OpenAI's shape: ``deleteModel`` is "delete model". Read as "model" it would be
    the delete's exact name, and "models" or "what is a model" would be answered from
    the delete. A read is named by what it returns: ``getModel`` is "model"."""
    ok = {"200": {"description": "ok"}}
    spec = {"openapi": "3.0.0", "info": {"title": "Models", "version": "1"}, "paths": {
        "/models": {"get": {"operationId": "listModels", "responses": ok,
                            "summary": "Lists the currently available models"}},
        "/models/{model}": {
            "get": {"operationId": "getModel", "responses": ok,
                    "summary": "Retrieves a model instance"},
            "delete": {"operationId": "deleteModel", "responses": ok,
                       "summary": "Delete a fine-tuned model"},
        },
    }}  # fmt: skip
    (tmp_path / "models.json").write_text(json.dumps(spec))
    assert kb.ingest(tmp_path / "models.json", source="m").ok
    assert kb.get("models:DELETE /models/{model}").aliases == ("deleteModel", "delete model")
    assert kb.get("models:GET /models/{model}").aliases == ("getModel", "model")
    for question in ("models", "what is a model"):
        r = kb.search(question, limit=3)
        assert not (r.verdict.kind == "answer" and r.hits[0].method == "DELETE"), question
    r = kb.search("delete a model", limit=3)
    assert (r.verdict.kind, r.hits[0].method) == ("answer", "DELETE")


def test_a_summary_that_is_a_paragraph_gives_a_short_title_and_keeps_its_words(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """OpenAI's shape: the summary is the whole description, links and all (up to
    1,353 characters). Its first sentence is the title; the paragraph is still
    searched, in the description's place. A summary that opens with a question gives
    way to what the method and path say; one sentence is the title, without its full
    stop."""
    ok = {"200": {"description": "ok"}}
    upload = (
        "Creates an intermediate [Upload](/docs/api-reference/uploads/object) object\n"
        "that you can add [Parts](/docs/api-reference/uploads/part-object) to.\n"
        "Currently, an Upload can accept at most 8 GB in total and expires after an hour."
    )
    spec = {"openapi": "3.0.0", "info": {"title": "Files", "version": "1"}, "paths": {
        "/uploads": {"post": {"operationId": "createUpload", "responses": ok,
                              "summary": upload}},
        "/chat/completions": {"post": {
            "operationId": "createChatCompletion", "responses": ok,
            "summary": "**Starting a new project?** We recommend trying "
                       "[Responses](/docs/api-reference/responses) instead."}},
        "/files": {"get": {"operationId": "listFiles", "responses": ok,
                           "summary": "Returns a list of files."}},
        "/Accounts/{Sid}/Addresses/{AddressSid}": {"delete": {"responses": ok}},
        "/v1/balance/history": {"get": {"responses": ok}},
        "/v1/alpha/graders": {"post": {"responses": ok}},
        "/issues/{n}/lock": {"delete": {"operationId": "issues/unlock", "responses": ok}},
        "/runs/{run_id}/submit_tool_outputs": {"post": {
            "operationId": "submitToolOuputs", "responses": ok,
            "summary": "When a run has the `status: \"requires_action\"` and its "
                       "`required_action.type` is `submit_tool_outputs`, this endpoint "
                       "submits the outputs from the tool calls. They must all be sent."}},
    }}  # fmt: skip
    (tmp_path / "files.json").write_text(json.dumps(spec))
    assert kb.ingest(tmp_path / "files.json", source="f").ok
    up = kb.get("files:POST /uploads")
    assert up.title == "Creates an intermediate Upload object that you can add Parts to"
    assert "expires after an hour" in up.content
    # what the method and path say, the namespace with the collection ("chat completion")
    assert kb.get("files:POST /chat/completions").title == "Create a chat completion"
    assert kb.get("files:GET /files").title == "Returns a list of files"
    # no summary: "an" before a vowel; a namespace but not a stage or a parameter
    assert kb.get("files:DELETE /Accounts/{Sid}/Addresses/{AddressSid}").title == (
        "Delete an address"
    )
    assert kb.get("files:GET /v1/balance/history").title == "Get a balance history"
    assert kb.get("files:POST /v1/alpha/graders").title == "Create a grader"
    # the verb the path ends with is not said twice ("Submit a submit tool output")
    tools = kb.get("files:POST /runs/{run_id}/submit_tool_outputs")
    assert tools.title == "Submit tool outputs"
    # nor the verb the kind undoes ("Unlock a lock")
    assert kb.get("files:DELETE /issues/{n}/lock").title == "Unlock an issue"
    r = kb.search("how long until an upload expires", limit=3)
    assert r.hits[0].doc_id == "files:POST /uploads"


# ----------------------------------------------------------------------------- graph


def test_naming_rules() -> None:
    assert [singular(w) for w in ("policies", "addresses", "statuses", "boxes", "pods")] == [
        "policy", "address", "status", "box", "pod"
    ]  # fmt: skip
    assert resource_key("PaymentIntents") == resource_key("payment intent") == "payment_intent"
    assert path_resources("/v1/customers/{customer}/sources") == ["customer", "source"]
    assert path_resources("/apis/apps/v1/namespaces/{namespace}/deployments") == [
        "namespace", "deployment"
    ]  # fmt: skip
    assert path_resources("/2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers.json") == [
        "account", "incoming_phone_number"
    ]  # fmt: skip
    assert operation_kind("POST", "/v1/charges/{charge}/capture") == "capture"
    assert operation_kind("POST", "/v1/payment_intents/{i}/verify_microdeposits") == "verify"
    assert operation_kind("GET", "/api/v1/watch/pods", hint="watchlist") == "watch"
    assert operation_kind("GET", "/user") == "read"
    assert operation_kind("GET", "/v1/customers") == "list"
    # An operationId decides a GET of a literal segment the plural rule cannot tell.
    assert operation_kind("GET", "/Messages/{Sid}/Media.json", operation_id="ListMedia") == "list"
    assert operation_kind("GET", "/v1/Config/Webhooks", operation_id="FetchWebhook") == "read"
    assert operation_kind("GET", "/v1/customers", operation_id="GetCustomers") == "list"


def test_operation_words_and_query_fit() -> None:
    assert operation_kinds("buy") == ("create", "buy")
    assert operation_kinds("release") == ("delete", "release")
    assert operation_kinds("purchase") == ("create", "purchase")
    assert operation_kinds("capture") == ("capture",)

    def fit(question: str, path: str, kind: str) -> tuple[bool, bool, int]:
        f = operation_fit(question.lower().split(), path, kind)
        return f.kind, f.resource, f.unnamed_parents

    # Resource words, singular or plural, also run together ("config map").
    assert fit("change a config map", "/api/v1/namespaces/{ns}/configmaps/{n}", "update") == (
        True, True, 1
    )  # fmt: skip
    assert fit("buy a phone number", "/Accounts/{A}/IncomingPhoneNumbers.json", "create") == (
        True, True, 1
    )  # fmt: skip
    # A plural resource asks for the list; a singular one does not.
    assert fit("which nodes are in my cluster", "/api/v1/nodes", "list") == (True, True, 0)
    assert fit("which node runs it", "/api/v1/nodes", "list") == (False, True, 0)
    # Enclosing resources the question does not name.
    nested = "/v1/Services/{S}/Conversations/{C}/Messages"
    assert fit("post a message into a conversation", nested, "create") == (True, True, 1)
    assert (
        fit("post a message into a conversation", "/v1/Conversations/{C}/Messages", "create")[2]
        == 0
    )


def test_less_nested_operation_wins_when_the_parent_is_not_named(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "chat", "version": "1"},
        "paths": {
            f"{prefix}/Conversations/{{ConversationSid}}/Messages": {
                "post": {"summary": "Add a message to a conversation", "responses": {}}
            }
            for prefix in ("/v1/Services/{ServiceSid}", "/v1")
        },
    }
    (tmp_path / "chat.json").write_text(json.dumps(spec))
    kb.ingest(tmp_path / "chat.json", source="chat")
    hits = kb.search("add a message to a conversation", limit=2).hits
    assert [kb.get(h.doc_id).metadata["path"] for h in hits] == [
        "/v1/Conversations/{ConversationSid}/Messages",
        "/v1/Services/{ServiceSid}/Conversations/{ConversationSid}/Messages",
    ]


def test_graph_finds_endpoints_by_path_template_and_resource(kb: KnowledgeBase) -> None:
    kb.ingest(SPECS / "billing.json", source="billing")
    graph = APIGraph.build(_api_docs(kb))
    assert len(graph) == 10

    exact = graph.get_endpoint("/v1/customers/{customer}", "get")
    assert exact.match == "exact" and [e.doc_id for e in exact.endpoints] == [
        "billing:GET /v1/customers/{customer}"
    ]
    # Same resource: the collection and the other item operations.
    same = {(e.method, e.path) for e in exact.same_resource}
    assert ("POST", "/v1/customers") in same and ("DELETE", "/v1/customers/{customer}") in same
    assert {e.path for e in exact.children} == {"/v1/customers/{customer}/sources"}

    templ = graph.get_endpoint("/v1/customers/cus_123/", "DELETE")
    assert templ.match == "template" and templ.params == {"customer": "cus_123"}
    assert [e.method for e in templ.endpoints] == ["DELETE"]
    # /v1/customers/search is literal; it wins over the {customer} template.
    assert [e.operation_kind for e in graph.get_endpoint("/v1/customers/search").endpoints] == [
        "search"
    ]
    loose = graph.get_endpoint("/customers")
    assert loose.match == "loose" and {e.method for e in loose.endpoints} == {"GET", "POST"}
    folded = graph.get_endpoint("/CUSTOMERS/Cus_1", "get")
    assert folded.match == "loose" and folded.params == {"customer": "Cus_1"}
    nested = graph.get_endpoint("/customers/42/sources", "post")
    assert [e.doc_id for e in nested.endpoints] == ["billing:POST /v1/customers/{customer}/sources"]
    assert {e.path for e in nested.parents} >= {"/v1/customers", "/v1/customers/{customer}"}
    wrong = graph.get_endpoint("/v1/charges", "PUT")
    assert wrong.endpoints == () and wrong.other_methods == ("GET",)
    assert graph.get_endpoint("/nothing/here").match == "none"

    created = graph.find_endpoints("Customers", "add")
    assert [(e.method, e.path) for e in created] == [("POST", "/v1/customers")]
    assert {e.operation_kind for e in graph.find_endpoints("customer")} == {
        "create", "read", "list", "update", "delete", "search"
    }  # fmt: skip
    assert [e.path for e in graph.find_endpoints("charge", "capture")] == [
        "/v1/charges/{charge}/capture"
    ]
    assert graph.find_endpoints("invoice") == []
    by_name = {r.name: r for r in graph.resources()}
    assert set(by_name) == {"charge", "customer", "source"}
    assert by_name["source"].parents == ("customer",)
    assert by_name["customer"].children == ("source",)
    assert "create" in by_name["customer"].operations


# -------------------------------------------------------------------------- validate


def test_validate_reports_missing_summaries_and_dangling_related_ids(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    kb.ingest(SPECS / "petstore.yaml", source="pets")
    (tmp_path / "e.yaml").write_text(
        "entries:\n"
        "  - {id: g1, type: guide, title: G, category: c, content: x, related: [nope, g2]}\n"
        "  - {id: g2, type: guide, title: G2, category: c, content: y}\n"
    )
    kb.ingest(tmp_path, source="guides")
    problems = validate_store(kb.store)
    found = {(p.severity, p.code, p.doc_id) for p in problems}
    assert ("warning", "no_summary", "petstore:DELETE /pets/{petId}") in found
    assert ("error", "dangling_related", "g1") in found
    assert not any(
        p.code == "dangling_related" and p.doc_id.startswith("petstore") for p in problems
    )
    assert problems[0].severity == "error"
    assert "related id 'nope' names no document" in str(problems[0])
    assert all(p.doc_id.startswith("petstore") for p in validate_store(kb.store, ["pets"]))


# ---------------------------------------------------------------------- real corpora


def _operations(spec: Path) -> int:
    data = json.loads(spec.read_text())
    return sum(1 for item in data.get("paths", {}).values() for method in item if method in METHODS)


@pytest.mark.slow
@pytest.mark.skipif(not CORPORA.is_dir(), reason="real OpenAPI corpora not available")
def test_every_real_spec_ingests_completely_and_quickly(kb: KnowledgeBase) -> None:
    timings: dict[str, float] = {}
    for spec in sorted(CORPORA.glob("*.json")):
        started = time.perf_counter()
        r = kb.ingest(spec, source=spec.stem)
        timings[spec.stem] = time.perf_counter() - started
        assert r.ok, r.errors[:5]
        assert r.inserted == _operations(spec) > 0, spec.name
    twilio = CORPORA / "twilio"
    started = time.perf_counter()
    r = kb.ingest(twilio, source="twilio")
    timings["twilio"] = time.perf_counter() - started
    assert r.ok, r.errors[:5]
    assert r.files == 55
    assert r.inserted == sum(_operations(f) for f in twilio.glob("*.json"))
    again = kb.ingest(CORPORA / "github.json", source="github")
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 1223)
    graph = APIGraph.build(_api_docs(kb, "kubernetes"))
    found = graph.find_endpoints("pods", "delete")
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in {e.path for e in found}
    evict = graph.find_endpoints("pod", "evict")
    assert [e.path for e in evict] == ["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    looked = graph.get_endpoint("/api/v1/namespaces/default/pods/web-1", "GET")
    assert looked.match == "template"
    assert looked.params == {"namespace": "default", "name": "web-1"}
    print("ingest seconds:", {k: round(v, 2) for k, v in timings.items()})


# ------------------------------------------------------------- ranking API operations


def _spec(title: str, paths: dict[str, dict[str, str]]) -> dict[str, object]:
    """A spec of summaries only: {path: {method: summary}}."""
    return {
        "openapi": "3.0.3",
        "info": {"title": title, "version": "1"},
        "paths": {
            p: {m: {"summary": s, "responses": {}} for m, s in ops.items()}
            for p, ops in paths.items()
        },
    }


def _words(text: str) -> list[str]:
    return text.split()


def test_question_verbs_and_nouns_stand_for_operation_kinds_and_resources() -> None:
    set_up = asked_kinds(_words("set up a messaging service"))
    assert "create" in set_up and "update" not in set_up
    assert "read" in asked_kinds(_words("look up a verification"))
    # "all" and "every" ask for a list, unless another verb asks for something else.
    assert "list" in asked_kinds(_words("get every pod in the cluster"))
    assert "list" not in asked_kinds(_words("delete all pods in a namespace"))
    assert "eviction" in noun_forms("evict") and "execution" in noun_forms("execute")

    def fit(question: str, path: str, kind: str) -> tuple[bool, bool, int, bool]:
        f = operation_fit(question.lower().split(), path, kind)
        return f.kind, f.resource, f.unnamed_parents, f.whole

    # A verb that forms the resource's name asks for that operation, by name.
    evict = "/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    assert fit("evict a pod", evict, "create") == (True, True, 1, True)
    # "job" names the job whole and the cron job only by its end.
    assert fit("check a job", "/apis/batch/v1/jobs/{name}", "read")[3] is True
    assert fit("check a job", "/apis/batch/v1/cronjobs/{name}", "read")[1:] == (True, 0, False)
    # A plural asks for the list, but not when a verb asks to delete them.
    assert fit("delete all pods", "/api/v1/namespaces/{ns}/pods", "list")[0] is False
    assert fit("delete all pods", "/api/v1/namespaces/{ns}/pods", "delete")[0] is True


def test_superseded_versions_are_the_same_operation_in_an_older_version() -> None:
    assert version_rank("v1alpha1") < version_rank("v1beta2") < version_rank("v1")
    assert version_rank("v1") < version_rank("v2beta1") < version_rank("v2")
    assert version_family("studio_v2", "POST", "/v2/Flows/{FlowSid}/Executions") == (
        "studio POST /{v}/flows/{}/executions",
        ((2, 2, 0), (2, 2, 0)),
    )
    docs = [
        DocSummary(f"{spec}:{method} {path}", "s", "api", "", "", "", (), (), "", "", "", kind)
        for spec, method, path, kind in (
            ("studio_v1", "POST", "/v1/Flows/{FlowSid}/Executions", "create"),
            ("studio_v2", "POST", "/v2/Flows/{Sid}/Executions", "create"),
            ("studio_v1", "POST", "/v1/Flows/{FlowSid}/Engagements", "create"),
            ("k8s", "GET", "/apis/autoscaling/v1/namespaces/{ns}/hpas", "list"),
            ("k8s", "GET", "/apis/autoscaling/v2/namespaces/{ns}/hpas", "list"),
            ("k8s", "GET", "/apis/batch/v1/jobs", "list"),
        )
    ]
    index = ApiIndex.build(docs)
    # Only an operation that a newer version also has is superseded: Engagements,
    # which the newer version dropped, is not.
    assert index.superseded == {
        "studio_v1:POST /v1/Flows/{FlowSid}/Executions",
        "k8s:GET /apis/autoscaling/v1/namespaces/{ns}/hpas",
    }
    named = [d.id for d in index.named_by(_words("list the jobs"), 10)]
    assert named == ["k8s:GET /apis/batch/v1/jobs"]
    assert [d.id for d in index.named_by(_words("make an engagement"), 10)] == [
        "studio_v1:POST /v1/Flows/{FlowSid}/Engagements"
    ]


def test_search_prefers_the_newest_version_of_the_same_operation(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    for version in ("v1", "v2"):
        spec = _spec("studio", {f"/{version}/Flows/{{FlowSid}}/Executions": {
            "post": "Triggers a new Execution for the Flow"
        }})  # fmt: skip
        (tmp_path / f"studio_{version}.json").write_text(json.dumps(spec))
    kb.ingest(tmp_path, source="studio")
    hits = kb.search("trigger a flow", limit=2).hits
    assert [h.doc_id for h in hits] == [
        "studio_v2:POST /v2/Flows/{FlowSid}/Executions",
        "studio_v1:POST /v1/Flows/{FlowSid}/Executions",
    ]


def test_operations_on_a_named_resource_are_candidates_even_when_its_name_is_everywhere(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    # "namespace" is in every operation; the words of "make a new …" are in others'
    # titles. Keyword candidates alone (two here) miss the operation that creates one.
    paths: dict[str, dict[str, str]] = {
        f"/api/v1/namespaces/{{namespace}}/thing{i}s": {
            "post": f"Create a new thing{i} in a namespace"
        }
        for i in range(12)
    }
    paths["/api/v1/namespaces"] = {"post": "create a Namespace", "get": "list Namespaces"}
    (tmp_path / "k.json").write_text(json.dumps(_spec("k", paths)))
    kb.ingest(tmp_path / "k.json", source="k")
    narrow = kb.settings.replace(candidates=2)
    with KnowledgeBase.open(kb.settings.db, narrow) as small:
        hits = small.search("make a new namespace", limit=1).hits
    assert [h.doc_id for h in hits] == ["k:POST /api/v1/namespaces"]


def test_find_endpoints_takes_verbs_and_subresources_formed_from_them(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    spec = _spec("k", {
        "/pods": {"post": "create a Pod", "get": "list Pods"},
        "/pods/{name}": {"put": "replace a Pod", "delete": "delete a Pod"},
        "/pods/{name}/eviction": {"post": "create eviction of a Pod"},
    })  # fmt: skip
    (tmp_path / "k.json").write_text(json.dumps(spec))
    kb.ingest(tmp_path / "k.json", source="k")
    graph = APIGraph.build(_api_docs(kb))
    assert [(e.method, e.path) for e in graph.find_endpoints("pod", "set up")] == [
        ("POST", "/pods")
    ]
    assert [(e.method, e.path) for e in graph.find_endpoints("pod", "evict")] == [
        ("POST", "/pods/{name}/eviction")
    ]
    assert graph.find_endpoints("pod", "frobnicate") == []


def test_a_segment_a_parameter_follows_is_a_collection_though_a_verb_leads_it() -> None:
    paths = ["/repos/{o}/{r}/check-runs", "/repos/{o}/{r}/check-runs/{check_run_id}"]
    collections = collection_segments(paths)
    assert collections == {"repos", "check-runs"}
    # Without the spec's other paths "check-runs" reads as the verb "check".
    assert operation_kind("POST", paths[0]) == "check"
    assert operation_kind("POST", paths[0], collections=collections) == "create"
    assert operation_kind("GET", paths[0], collections=collections) == "list"
    assert path_resources(paths[0], collections) == ["repo", "check_run"]
    # The parameter that follows it in this path says as much.
    assert path_resources(paths[1]) == ["repo", "check_run"]
    # An action stays one: no parameter follows it anywhere.
    verify = "/v1/payment_intents/{intent}/verify_microdeposits"
    assert operation_kind("POST", verify, collections=collections) == "verify"


def test_what_a_get_or_delete_of_an_action_segment_does() -> None:
    # A GET of an action reads its state when another method of the path does it.
    merge = "/repos/{o}/{r}/pulls/{n}/merge"
    assert operation_kind("GET", merge, methods=("get", "put")) == "read"
    assert operation_kind("GET", "/v1/credit_notes/preview", methods=("get",)) == "preview"
    assert operation_kind("GET", "/v1/customers/search") == "search"
    assert operation_kind("PUT", "/repos/{o}/{r}/pulls/{n}/merge") == "merge"
    # Another method does the verb its operationId names, else the segment's.
    lock = "/repos/{o}/{r}/issues/{n}/lock"
    assert operation_kind("PUT", lock, operation_id="issues/lock") == "lock"
    assert operation_kind("DELETE", lock, operation_id="issues/unlock") == "unlock"
    archive = "/orgs/{org}/migrations/{migration_id}/archive"
    assert operation_kind("DELETE", archive, operation_id="migrations/delete-archive-for-org") == (
        "delete"
    )
    assert operation_kind("DELETE", lock) == "lock"


def test_verb_led_collections_are_resources_in_the_graph_and_the_ranking(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    spec = _spec("checks", {
        "/repos/{owner}/{repo}/check-runs": {"post": "Create a check run"},
        "/repos/{owner}/{repo}/check-runs/{check_run_id}": {
            "get": "Get a check run", "patch": "Update a check run",
        },
        "/repos/{owner}/{repo}/commits/{ref}/check-runs": {"get": "List check runs for a ref"},
        "/repos/{owner}/{repo}/issues/{issue_number}/lock": {
            "put": "Lock an issue", "delete": "Unlock an issue",
        },
    })  # fmt: skip
    paths = spec["paths"]
    paths["/repos/{owner}/{repo}/issues/{issue_number}/lock"]["delete"]["operationId"] = (
        "issues/unlock"
    )
    paths["/repos/{owner}/{repo}/check-runs"]["post"]["operationId"] = "checks/create"
    (tmp_path / "checks.json").write_text(json.dumps(spec))
    kb.ingest(tmp_path / "checks.json", source="checks")
    docs = {d.id: d for d in _api_docs(kb)}
    create = docs["checks:POST /repos/{owner}/{repo}/check-runs"]
    assert create.metadata["operation_kind"] == "create"
    assert create.metadata["resources"] == ["repo", "check_run"]
    # The collection and its items are one another's related operations.
    assert "checks:GET /repos/{owner}/{repo}/check-runs/{check_run_id}" in create.related_ids
    unlock = docs["checks:DELETE /repos/{owner}/{repo}/issues/{issue_number}/lock"]
    assert unlock.metadata["operation_kind"] == "unlock"

    graph = APIGraph.build(list(docs.values()))
    assert {(e.method, e.operation_kind) for e in graph.find_endpoints("check run")} == {
        ("POST", "create"), ("GET", "read"), ("PATCH", "update"), ("GET", "list")
    }  # fmt: skip
    assert [e.path for e in graph.find_endpoints("check run", "create")] == [
        "/repos/{owner}/{repo}/check-runs"
    ]
    # The search engine reads the spec's collections from the operations it indexes.
    index = ApiIndex.build(kb.list_documents(type="api", limit=100))
    assert index.endpoint(create.id)[2] == "check_run"
    hit = kb.search("create a check run", mode="keyword").hits[0]
    assert hit.doc_id == create.id
    # "check" leads the resource's name: a noun there, not an action of the operation,
    # so a request to delete a check run is not answered from the create.
    assert "check" not in index.actions[create.id]
    summary = index.summaries[create.id]
    assert near_miss(["delete", "a", "check", "run"], summary, index) == (
        "it does a create, not the delete asked"
    )
    assert kb.search("delete a check run", mode="keyword").verdict.kind != "answer"
