/*
 * geometry.c — the plane geometry of text detection: convex hull, minimum-area enclosing
 * rectangle, outward polygon offset ("unclip" of DB), ordering of a box's corners, and a
 * point-in-convex-polygon test.
 *
 * Orientation: cross(o, a, b) = (a - o) x (b - o) = (a.x - o.x)(b.y - o.y) - (a.y - o.y)(b.x - o.x)
 * is > 0 when o -> a -> b turns counter-clockwise in x-right / y-up terms. Hulls are kept in that
 * orientation; for an edge of direction (dx, dy) the outward unit normal is then (dy, -dx) / len.
 *
 * Minimum-area rectangle (rotating calipers): some side of the optimal rectangle lies along an
 * edge of the hull (Freeman & Shapira 1975), so for each hull edge with unit direction u and
 * normal v the rectangle is [min u.p, max u.p] x [min v.p, max v.p] over the hull points p, of area
 * (max - min along u) (max - min along v); the smallest wins.
 *
 * Offset by d with round joins: each edge moves out by d along its normal, and at each vertex an
 * arc of radius d joins the two moved edges, from the previous edge's normal to the next one's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocr/ocr_impl.h"

static double cross(ocr_pt o, ocr_pt a, ocr_pt b) {
    return ((double)a.x - o.x) * ((double)b.y - o.y) - ((double)a.y - o.y) * ((double)b.x - o.x);
}

static int by_x_then_y(const void *pa, const void *pb) {
    const ocr_pt *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    return 0;
}

int ocr_convex_hull(const ocr_pt *pts, int n, ocr_pt *hull) {
    if (n <= 0) return 0;
    ocr_pt *s = malloc(sizeof *s * (size_t)n);
    if (!s) return 0;
    memcpy(s, pts, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, by_x_then_y);
    int m = 0; /* distinct points */
    for (int i = 0; i < n; i++)
        if (m == 0 || s[i].x != s[m - 1].x || s[i].y != s[m - 1].y) s[m++] = s[i];
    if (m < 3) {
        memcpy(hull, s, sizeof *s * (size_t)m);
        free(s);
        return m;
    }
    /* lower chain left to right, then upper chain right to left; hull needs 2m slots while
     * building, but ends with at most m, so build in a scratch array */
    ocr_pt *h = malloc(sizeof *h * (size_t)(2 * m));
    if (!h) {
        free(s);
        return 0;
    }
    int k = 0;
    for (int i = 0; i < m; i++) {
        while (k >= 2 && cross(h[k - 2], h[k - 1], s[i]) <= 0) k--;
        h[k++] = s[i];
    }
    for (int i = m - 2, lower = k + 1; i >= 0; i--) {
        while (k >= lower && cross(h[k - 2], h[k - 1], s[i]) <= 0) k--;
        h[k++] = s[i];
    }
    k--; /* the first point came back at the end */
    if (k < 2) k = 2; /* every point on one line: its two ends */
    memcpy(hull, h, sizeof *h * (size_t)k);
    free(h);
    free(s);
    return k;
}

double ocr_polygon_area(const ocr_pt *p, int n) {
    double a = 0;
    for (int i = 0; i < n; i++) {
        const ocr_pt *q = &p[i], *r = &p[(i + 1) % n];
        a += (double)q->x * r->y - (double)r->x * q->y;
    }
    return a / 2;
}

double ocr_polygon_perimeter(const ocr_pt *p, int n) {
    double l = 0;
    for (int i = 0; i < n && n > 1; i++) l += hypot((double)p[(i + 1) % n].x - p[i].x, (double)p[(i + 1) % n].y - p[i].y);
    return l;
}

void ocr_order_box(ocr_pt box[4]) {
    ocr_pt s[4];
    memcpy(s, box, sizeof s);
    qsort(s, 4, sizeof *s, by_x_then_y);
    int tl = s[0].y <= s[1].y ? 0 : 1, tr = s[2].y <= s[3].y ? 2 : 3;
    box[0] = s[tl];
    box[1] = s[tr];
    box[2] = s[5 - tr];
    box[3] = s[1 - tl];
}

float ocr_min_area_rect(const ocr_pt *pts, int n, ocr_pt box[4]) {
    ocr_pt *h = n > 0 ? malloc(sizeof *h * (size_t)n) : NULL;
    int m = h ? ocr_convex_hull(pts, n, h) : 0;
    if (m < 3) {
        /* a point or a segment: a rectangle of no width along it */
        ocr_pt a = m ? h[0] : (ocr_pt){0, 0}, b = m == 2 ? h[1] : a;
        box[0] = a, box[1] = b, box[2] = b, box[3] = a;
        ocr_order_box(box);
        free(h);
        return 0;
    }
    double best = INFINITY, bu[2] = {0}, bv[2] = {0}, ux = 1, uy = 0;
    for (int i = 0; i < m; i++) {
        ocr_pt a = h[i], b = h[(i + 1) % m];
        double dx = (double)b.x - a.x, dy = (double)b.y - a.y, len = hypot(dx, dy);
        if (len == 0) continue;
        dx /= len, dy /= len;
        double lo_u = INFINITY, hi_u = -INFINITY, lo_v = INFINITY, hi_v = -INFINITY;
        for (int j = 0; j < m; j++) {
            double pu = h[j].x * dx + h[j].y * dy, pv = -h[j].x * dy + h[j].y * dx;
            if (pu < lo_u) lo_u = pu;
            if (pu > hi_u) hi_u = pu;
            if (pv < lo_v) lo_v = pv;
            if (pv > hi_v) hi_v = pv;
        }
        double area = (hi_u - lo_u) * (hi_v - lo_v);
        if (best == INFINITY || area < best - 1e-9 * best) { /* a near-tie keeps the first */
            best = area;
            bu[0] = lo_u, bu[1] = hi_u, bv[0] = lo_v, bv[1] = hi_v, ux = dx, uy = dy;
        }
    }
    free(h);
    /* back from (u, v) to (x, y): p = u (ux, uy) + v (-uy, ux) */
    double cu[4] = {bu[0], bu[1], bu[1], bu[0]}, cv[4] = {bv[0], bv[0], bv[1], bv[1]};
    for (int k = 0; k < 4; k++) box[k] = (ocr_pt){(float)(cu[k] * ux - cv[k] * uy), (float)(cu[k] * uy + cv[k] * ux)};
    ocr_order_box(box);
    double w = bu[1] - bu[0], ht = bv[1] - bv[0];
    return (float)(w < ht ? w : ht);
}

int ocr_offset_polygon(const ocr_pt *poly, int n, double d, ocr_pt *out, int cap) {
    ocr_pt *h = n > 0 ? malloc(sizeof *h * (size_t)n) : NULL;
    int m = h ? ocr_convex_hull(poly, n, h) : 0;
    if (m < 3) {
        free(h);
        return 0;
    }
    const double step = M_PI / 16; /* the arcs' angular step: at most 32 steps all round */
    int k = 0;
    for (int i = 0; i < m; i++) {
        ocr_pt prev = h[(i + m - 1) % m], p = h[i], next = h[(i + 1) % m];
        /* outward normals of the edge into p and the edge out of p */
        double a1 = atan2(-((double)p.x - prev.x), (double)p.y - prev.y);
        double a2 = atan2(-((double)next.x - p.x), (double)next.y - p.y);
        if (a2 < a1) a2 += 2 * M_PI;
        int steps = (int)ceil((a2 - a1) / step);
        if (steps < 1) steps = 1;
        for (int s = 0; s <= steps; s++) {
            if (k == cap) {
                free(h);
                return 0;
            }
            double a = a1 + (a2 - a1) * s / steps;
            out[k++] = (ocr_pt){(float)(p.x + d * cos(a)), (float)(p.y + d * sin(a))};
        }
    }
    free(h);
    return k;
}

float ocr_unclip(const ocr_pt box[4], float ratio, ocr_pt out[4]) {
    double area = fabs(ocr_polygon_area(box, 4)), len = ocr_polygon_perimeter(box, 4);
    ocr_pt grown[4 * 40];
    int n = len > 0 ? ocr_offset_polygon(box, 4, area * ratio / len, grown, (int)(sizeof grown / sizeof *grown)) : 0;
    if (n < 3) {
        memcpy(out, box, sizeof(ocr_pt) * 4);
        return 0;
    }
    return ocr_min_area_rect(grown, n, out);
}

void ocr_expand_box(const ocr_pt box[4], float across, float down, ocr_pt out[4]) {
    /* unit vectors along the box: u from the left side's midpoint to the right side's, v from the
     * top side's midpoint to the bottom side's */
    double ux = ((double)box[1].x + box[2].x - box[0].x - box[3].x) / 2, uy = ((double)box[1].y + box[2].y - box[0].y - box[3].y) / 2;
    double vx = ((double)box[3].x + box[2].x - box[0].x - box[1].x) / 2, vy = ((double)box[3].y + box[2].y - box[0].y - box[1].y) / 2;
    double lu = hypot(ux, uy), lv = hypot(vx, vy);
    if (lu > 0) ux /= lu, uy /= lu;
    if (lv > 0) vx /= lv, vy /= lv;
    const int su[4] = {-1, 1, 1, -1}, sv[4] = {-1, -1, 1, 1};
    for (int k = 0; k < 4; k++)
        out[k] = (ocr_pt){(float)(box[k].x + su[k] * across * ux + sv[k] * down * vx),
                          (float)(box[k].y + su[k] * across * uy + sv[k] * down * vy)};
}

int ocr_in_convex(const ocr_pt *poly, int n, ocr_pt p) {
    int pos = 0, neg = 0;
    for (int i = 0; i < n; i++) {
        double c = cross(poly[i], poly[(i + 1) % n], p);
        if (c > 1e-6) pos = 1;
        if (c < -1e-6) neg = 1;
        if (pos && neg) return 0;
    }
    return 1;
}
