"""Draw the integration's brand images into custom_components/azure_openai_memory/brand/.

Home Assistant 2026.3 and later read a custom integration's icon from that folder (older
versions ignore it; home-assistant/brands no longer takes custom integrations). Drawn
rather than kept as artwork alone, so a change of colour or shape is one edit and a rerun:
scripts/brand-images.

The picture: Azure's blue rounded square, a white speech bubble (Assist), and inside it
three lines of fading length, the remembered conversation.
"""

from pathlib import Path

from PIL import Image, ImageDraw

BRAND = Path(__file__).parents[1] / "custom_components" / "azure_openai_memory" / "brand"
AZURE_BLUE = (0, 120, 212, 255)
WHITE = (255, 255, 255, 255)
# Drawn at this multiple of the final size, then scaled down: smooth edges without
# Pillow's (absent) anti-aliased shapes.
OVERSAMPLE = 4


def draw_icon(size: int) -> Image.Image:
    """The square icon at size by size pixels, on a transparent background."""
    big = size * OVERSAMPLE
    unit = big / 256  # coordinates below are on a 256-pixel grid
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)

    def box(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        return (x0 * unit, y0 * unit, x1 * unit, y1 * unit)

    draw.rounded_rectangle(box(8, 8, 248, 248), radius=48 * unit, fill=AZURE_BLUE)
    draw.rounded_rectangle(box(44, 52, 212, 170), radius=28 * unit, fill=WHITE)
    draw.polygon(
        [(84 * unit, 166 * unit), (84 * unit, 206 * unit), (124 * unit, 166 * unit)], fill=WHITE
    )
    for row, length in enumerate((120, 92, 60)):
        top = 76 + row * 26
        draw.rounded_rectangle(
            box(68, top, 68 + length, top + 14), radius=7 * unit, fill=AZURE_BLUE
        )
    return image.resize((size, size), Image.Resampling.LANCZOS)


def main() -> None:
    """icon.png (256 px) and icon@2x.png (512 px)."""
    BRAND.mkdir(exist_ok=True)
    for name, size in (("icon.png", 256), ("icon@2x.png", 512)):
        path = BRAND / name
        draw_icon(size).save(path, optimize=True)
        print(f"{path.relative_to(BRAND.parents[2])}: {size}x{size}, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
