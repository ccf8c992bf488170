"""The Files API (/v1/files) through the official openai SDK: create, list,
retrieve, content, delete, and the errors it raises."""
import io

import openai
import pytest


def test_files_create_list_retrieve_content_delete(client):
    data = b"# Notes\nThe launch is on Tuesday.\n"
    f = client.files.create(file=("notes.md", io.BytesIO(data)), purpose="assistants")
    assert f.object == "file" and f.purpose == "assistants" and f.status == "processed"
    assert f.bytes == len(data) and f.filename == "notes.md" and f.created_at > 0 and f.expires_at is None

    brief = client.files.create(file=("brief.txt", b"Expires in an hour."), purpose="user_data",
                                expires_after={"anchor": "created_at", "seconds": 3600})
    assert brief.expires_at == brief.created_at + 3600

    ids = [x.id for x in client.files.list()]
    assert ids[:2] == [brief.id, f.id]
    assert [x.id for x in client.files.list(purpose="user_data")] == [brief.id]
    page = client.files.list(limit=1, order="asc", after=f.id)
    assert [x.id for x in page.data] == [brief.id]

    got = client.files.retrieve(f.id)
    assert got.id == f.id and got.bytes == len(data)
    assert client.files.content(f.id).read() == data

    # The file is an input of a response.
    r = client.responses.create(model="sim-small", max_output_tokens=5, input=[{"role": "user", "content": [
        {"type": "input_text", "text": "When is the launch?"}, {"type": "input_file", "file_id": f.id}]}])
    assert r.usage.input_tokens > 10

    for x in (f, brief):
        d = client.files.delete(x.id)
        assert d.id == x.id and d.deleted is True and d.object == "file"
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(f.id)


def test_files_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.files.create(file=("a.txt", b"hi"), purpose="training")
    assert e.value.body["param"] == "purpose"
    with pytest.raises(openai.BadRequestError) as e:
        client.files.create(file=("a.pdf", b"not a pdf"), purpose="assistants")
    assert e.value.body["param"] == "file"
    with pytest.raises(openai.NotFoundError):
        client.files.content("0190d5a8-0000-7000-8000-000000000000")
