// Eleventy (v3) configuration (eleventy.config.mjs), an ES module.
// Reference: https://www.11ty.dev/docs/config/
// Needs: npm install --save-dev @11ty/eleventy markdown-it-anchor

import { HtmlBasePlugin } from "@11ty/eleventy";
import markdownItAnchor from "markdown-it-anchor";

const site = {
  name: "{{site_name}}",
  description: "{{description}}",
  url: "{{site_url}}",
  repository: "{{repository_url}}",
  language: "{{language}}",
};

export default function (eleventyConfig) {
  // Templates read these as site.name, site.url and so on.
  eleventyConfig.addGlobalData("site", site);

  // Rewrites root-relative links so the site works under pathPrefix (e.g. GitHub project pages).
  eleventyConfig.addPlugin(HtmlBasePlugin);

  eleventyConfig.addPassthroughCopy("src/css");
  eleventyConfig.addPassthroughCopy("src/js");
  eleventyConfig.addPassthroughCopy("src/images");

  // Headings get ids and a permalink so readers can link to a section.
  eleventyConfig.amendLibrary("md", (md) => {
    md.use(markdownItAnchor, {
      permalink: markdownItAnchor.permalink.headerLink(),
    });
  });

  // Intl instead of a date library: no extra dependency.
  const dateFormat = new Intl.DateTimeFormat(site.language, { dateStyle: "long", timeZone: "UTC" });
  eleventyConfig.addFilter("readableDate", (date) => dateFormat.format(new Date(date)));
  eleventyConfig.addShortcode("year", () => String(new Date().getFullYear()));

  // One collection per Diataxis kind, from the folder the page lives in.
  for (const kind of ["tutorials", "how-to-guides", "reference", "explanation"]) {
    eleventyConfig.addCollection(kind, (api) => api.getFilteredByGlob(`src/${kind}/*.md`));
  }
}

export const config = {
  pathPrefix: "{{base_path}}",
  markdownTemplateEngine: "njk",
  htmlTemplateEngine: "njk",
  templateFormats: ["md", "njk", "html"],
  dir: {
    input: "src",
    output: "_site",
    includes: "_includes",
    layouts: "_layouts",
    data: "_data",
  },
};
