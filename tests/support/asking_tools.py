"""Tools that take their caller's part: ``python -m tests.support.asking_tools --broker URL ...``.

``register`` asks one question with every kind of field a question may have; ``summarise``
asks the caller's model for a completion; ``chatty`` logs at several levels; ``pay`` asks
for an approval; ``where`` asks for the caller's roots.
"""

from typing import Any

from argentic_tools import ToolContext, ToolError, serve_main, tool

REGISTRATION = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "colour": {
            "type": "string",
            "title": "Colour",
            "oneOf": [
                {"const": "r", "title": "Red"},
                {"const": "g", "title": "Green"},
                {"const": "b", "title": "Blue"},
            ],
            "default": "g",
        },
        "toppings": {
            "type": "array",
            "title": "Toppings",
            "items": {"type": "string", "enum": ["cheese", "olives", "basil"]},
        },
        "newsletter": {"type": "boolean", "title": "Newsletter", "default": False},
    },
    "required": ["name", "age"],
}
"""A question with a string, an integer, a titled single-select with a default, an untitled
multi-select and a boolean with a default."""


@tool
async def register(context: ToolContext) -> dict[str, Any]:
    """Ask who is registering; return the answer as it came."""
    answer = await context.elicit("Who is registering?", REGISTRATION)
    return {"action": answer.action, "content": answer.content}


@tool
async def summarise(text: str, context: ToolContext) -> str:
    """Have the caller's model summarise ``text``."""
    completion = await context.sample(
        f"Summarise: {text}", max_tokens=50, system="Answer in one sentence."
    )
    return completion.text


@tool
async def chatty(lines: int, context: ToolContext) -> int:
    """Log ``lines`` lines at debug, then one info and one warning line."""
    for number in range(lines):
        await context.log("debug", f"detail {number}")
    await context.log("info", "halfway there", {"lines": lines}, logger="chatty")
    await context.log("warning", "almost done")
    return lines


@tool
async def pay(amount: float, to: str, context: ToolContext) -> str:
    """Pay someone, once a person has said yes."""
    if not await context.confirm(f"Pay {amount:.2f} EUR to {to}?"):
        raise ToolError("not paid: the payment was not approved")
    return f"paid {amount:.2f} EUR to {to}"


@tool
async def where(context: ToolContext) -> list[str]:
    """The directories the caller lets this tool work in, as URIs."""
    return [root.uri for root in await context.list_roots()]


if __name__ == "__main__":
    serve_main([register, summarise, chatty, pay, where])
